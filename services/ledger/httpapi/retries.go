package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/ledger"
)

// maxJobs bounds the bulk retry jobs a ledger keeps to be polled: the
// oldest finished ones are forgotten first.
const maxJobs = 100

// job is one bulk retry running (or run) in this ledger process.
type job struct {
	id      string
	created time.Time
	cancel  context.CancelFunc
	stopped chan struct{} // closed once the job's goroutine has ended
	formKey string        // the dashboard form that started it, or ""

	mu  sync.Mutex
	rep ledger.BulkReport
}

// stopWait bounds how long a cancel waits for the saga in progress.
const stopWait = 10 * time.Second

// stop cancels the job and waits (within ctx and stopWait) until it has
// stopped, so that the report it answers is final: a client that then
// counts the failed sagas sees no replay land after it.
func (j *job) stop(ctx context.Context) ledger.BulkReport {
	j.cancel()
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-j.stopped:
	case <-ctx.Done():
	case <-t.C:
	}
	return j.report()
}

func (j *job) report() ledger.BulkReport {
	j.mu.Lock()
	defer j.mu.Unlock()
	rep := j.rep
	rep.Items = append([]ledger.BulkItem(nil), j.rep.Items...)
	return rep
}

// jobs are the bulk retries of one API, by id, oldest first.
type jobs struct {
	mu   sync.Mutex
	all  map[string]*job
	list []*job
}

func (a *API) bulkJobs() *jobs {
	a.jobsOnce.Do(func() { a.jobs = &jobs{all: map[string]*job{}} })
	return a.jobs
}

func (js *jobs) add(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if len(js.list) >= maxJobs {
		for i, old := range js.list {
			if old.report().Finished {
				delete(js.all, old.id)
				js.list = append(js.list[:i:i], js.list[i+1:]...)
				break
			}
		}
	}
	js.all[j.id] = j
	js.list = append(js.list, j)
}

// byFormKey finds the job a dashboard form started.
func (js *jobs) byFormKey(key string) (*job, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.list {
		if j.formKey == key {
			return j, true
		}
	}
	return nil, false
}

func (js *jobs) get(id string) (*job, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.all[id]
	return j, ok
}

// bulkAccepted is the answer to POST /api/v1/retries.
type bulkAccepted struct {
	ID      string `json:"id"`
	Matched int    `json:"matched"`
	DryRun  bool   `json:"dry_run,omitempty"`
	Status  string `json:"status"` // where to poll the job
}

// postRetries starts a bulk retry of the failed sagas a filter selects
// (design §8): 202 with the job, whose progress GET /api/v1/retries/{id}
// reports and DELETE cancels. Each saga is retried as POST
// /api/v1/sagas/{pr}/retry would, with an Idempotency-Key of its own.
func (a *API) postRetries(w http.ResponseWriter, r *http.Request) {
	var req ledger.BulkRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		a.fail(w, r, &contracts.FieldError{Field: "body", Problem: "is not a bulk retry: " + err.Error()})
		return
	}
	if req.Rate < 0 {
		a.fail(w, r, &contracts.FieldError{Field: "rate", Problem: "must not be negative"})
		return
	}
	sagas, err := ledger.SelectFailed(r.Context(), a.Sagas, req.BulkFilter)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	req.Actor = a.actor(r)
	j := a.startBulk(r.Context(), sagas, req, "")
	httpx.WriteJSON(w, http.StatusAccepted, bulkAccepted{ID: j.id, Matched: len(sagas), DryRun: req.DryRun, Status: "/api/v1/retries/" + j.id})
}

// startBulk runs a bulk retry of sagas as a job of this ledger, outliving
// the request that started it. formKey is the dashboard form's key ("" for
// the API): a form posted twice finds its job (jobs.byFormKey).
func (a *API) startBulk(rctx context.Context, sagas []ledger.Saga, req ledger.BulkRequest, formKey string) *job {
	ctx, cancel := context.WithCancel(context.WithoutCancel(rctx))
	j := &job{id: a.NewID(), created: a.now(), cancel: cancel, stopped: make(chan struct{}), formKey: formKey,
		rep: ledger.BulkReport{Matched: len(sagas), DryRun: req.DryRun, Items: []ledger.BulkItem{}}}
	a.bulkJobs().add(j)
	go func() {
		defer close(j.stopped)
		defer cancel()
		rep := ledger.BulkRetry(ctx, a.Retrier, sagas, req, func(rep ledger.BulkReport) {
			j.mu.Lock()
			j.rep = rep
			j.mu.Unlock()
		})
		j.mu.Lock()
		j.rep = rep
		j.mu.Unlock()
		a.log().Info("bulk retry finished", "job", j.id, "actor", req.Actor, "matched", rep.Matched,
			"replayed", rep.Replayed, "skipped", rep.Skipped, "refused", rep.Refused, "errors", rep.Errors,
			"dry_run", rep.DryRun, "cancelled", rep.Cancelled)
	}()
	return j
}

// getRetries reports a bulk retry's progress (its summary once finished).
func (a *API) getRetries(w http.ResponseWriter, r *http.Request) {
	j, ok := a.bulkJobs().get(r.PathValue("id"))
	if !ok {
		a.fail(w, r, errJobNotFound)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, j.report())
}

// deleteRetries cancels a bulk retry: the saga being retried finishes, no
// further one starts. The answer is the final report, once the job stopped.
func (a *API) deleteRetries(w http.ResponseWriter, r *http.Request) {
	j, ok := a.bulkJobs().get(r.PathValue("id"))
	if !ok {
		a.fail(w, r, errJobNotFound)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, j.stop(r.Context()))
}

var errJobNotFound = httpx.Errorf(http.StatusNotFound, "no such bulk retry in this ledger (a job lives in the ledger process that started it)")
