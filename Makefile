# prsaga — run `make test` (what CI runs) or `make demo`.
MODULES := contracts platform services/validator services/merger services/notifier services/indexer services/ledger cmd/prsaga
GO ?= go
TEST_TIMEOUT ?= 20m

.PHONY: test quick vet build demo dev tidy fmt

test: vet
	@set -e; for m in $(MODULES); do echo "== go test -race $$m"; (cd $$m && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...); done

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

dev: build
	./bin/prsaga dev

tidy:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy); done

fmt:
	gofmt -w $(MODULES)
