package httpapi

import (
	"net/http"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/validator"
)

// statusIn is the body of a status post.
type statusIn struct {
	Context     string `json:"context"`
	State       string `json:"state"`
	Description string `json:"description"`
}

// statusOut is a stored status as answered to a post.
type statusOut struct {
	Repo string `json:"repo"`
	SHA  string `json:"sha"`
	validator.Status
}

// combined is the answer of GET statuses.
type combined struct {
	SHA      string             `json:"sha"`
	State    string             `json:"state"`
	Statuses []validator.Status `json:"statuses"`
}

func repoSHA(r *http.Request) (repo, sha string, err error) {
	return repoAnd(r, "sha", contracts.ValidateSHA)
}

func (a *API) postStatus(w http.ResponseWriter, r *http.Request) {
	var in statusIn
	repo, sha, ok := a.decodeWrite(w, r, repoSHA, &in)
	if !ok {
		return
	}
	st := validator.Status{Context: in.Context, State: in.State, Description: in.Description}
	if err := st.Validate(); err != nil {
		a.fail(w, r, httpx.Errorf(http.StatusBadRequest, "%s", err))
		return
	}
	st, err := a.Store.SetStatus(r.Context(), repo, sha, st)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, statusOut{Repo: repo, SHA: sha, Status: st})
}

func (a *API) getStatuses(w http.ResponseWriter, r *http.Request) {
	repo, sha, err := repoSHA(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	sts, err := a.Store.Statuses(r.Context(), repo, sha)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if sts == nil {
		sts = []validator.Status{}
	}
	httpx.WriteJSON(w, http.StatusOK, combined{SHA: sha, State: validator.Combined(sts), Statuses: sts})
}
