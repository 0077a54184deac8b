# prsaga — run `make test` (what CI runs) or `make demo`.
MODULES := contracts platform services/validator services/merger services/notifier services/indexer services/ledger cmd/prsaga
GO ?= go
TEST_TIMEOUT ?= 20m
# Budget per fuzz target: short inside `make test` (after the tests), longer
# with `make fuzz`. make test counts executions rather than seconds, so that a
# loaded machine fuzzes as much as an idle one (and Go 1.26's coordinator
# deadline, golang/go#75804, cannot arise: .ci/fuzz says more).
FUZZTIME_SHORT ?= 10000x
FUZZTIME ?= 1m

.PHONY: test quick vet build demo demo-stay dev tidy fmt fuzz fuzz-short merge-sweep

# The merger's differential corpus (gitrepo TestMergeCorpus) writes its
# figures per kind here; go test hides a passing package's log, so test
# prints them.
CORPUS_SUMMARY := $(CURDIR)/.merge-corpus-summary
test: export PRSAGA_CORPUS_SUMMARY = $(CORPUS_SUMMARY)
test: vet
	@rm -f $(CORPUS_SUMMARY)
	@set -e; for m in $(MODULES); do echo "== go test -race $$m"; (cd $$m && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...); done
	@# -race runs ledger verify over 250 sagas; the issue's "thousands" run without it.
	@echo "== go test cmd/prsaga TestLedgerVerifyAndRepair (2,000 sagas, no -race)"
	@cd cmd/prsaga && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '^TestLedgerVerifyAndRepair$$' .
	@cat $(CORPUS_SUMMARY) 2>/dev/null || echo "merge corpus: no figures (TestMergeCorpus skipped?)"
	@[ -n "$$PRSAGA_TEST_YDB" ] || echo "storetest: YDB skipped: PRSAGA_TEST_YDB not set (the conformance suite ran on SQLite only)"
	$(call run-fuzz,$(FUZZTIME_SHORT))

# Every fuzz target of every module, one at a time, for $(1) each (.ci/fuzz).
# A failing input is written to the package's testdata/fuzz/FuzzX/: commit it
# with the fix, it becomes a regression test that every `go test` runs.
run-fuzz = @FUZZTIME=$(1) GO=$(GO) bash .ci/fuzz $(MODULES)

fuzz-short:
	$(call run-fuzz,$(FUZZTIME_SHORT))

fuzz:
	$(call run-fuzz,$(FUZZTIME))

# A larger run of the merger's differential corpus (20,000 merges against
# git merge-tree; no -race): MERGE_SWEEP_CASES, MERGE_SWEEP_SEED to vary.
MERGE_SWEEP_CASES ?= 20000
MERGE_SWEEP_SEED ?= 20261201
merge-sweep:
	cd services/merger && $(GO) test -count=1 -timeout 60m -run '^TestMergeCorpus$$' -v ./gitrepo \
	  -gitrepo.corpus=$(MERGE_SWEEP_CASES) -gitrepo.corpusseed=$(MERGE_SWEEP_SEED)

quick:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) test -count=1 -short ./...); done

vet:
	@set -e; test -z "$$(gofmt -l $(MODULES))" || { echo "gofmt needed:"; gofmt -l $(MODULES); exit 1; }
	@set -e; for m in $(MODULES); do echo "== go vet $$m"; (cd $$m && $(GO) vet ./...); done

build:
	@mkdir -p bin
	cd cmd/prsaga && $(GO) build -o ../../bin/prsaga .

demo: build
	./bin/prsaga demo

demo-stay: build  # the demo, then its dashboard stays up until Ctrl-C
	./bin/prsaga demo --stay

dev: build
	./bin/prsaga dev

tidy:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy); done

fmt:
	gofmt -w $(MODULES)
