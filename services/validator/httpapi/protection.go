package httpapi

import (
	"net/http"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/validator"
)

// protectionIn is the body of PUT protection.
type protectionIn struct {
	RequiredContexts *[]string `json:"required_contexts"`
}

// protectionOut is a branch's protection. Configured is false when the
// service's default applies.
type protectionOut struct {
	Repo             string   `json:"repo"`
	Branch           string   `json:"branch"`
	RequiredContexts []string `json:"required_contexts"`
	Configured       bool     `json:"configured"`
}

func repoBranch(r *http.Request) (repo, branch string, err error) {
	return repoAnd(r, "branch", contracts.ValidateBranch)
}

func (a *API) putProtection(w http.ResponseWriter, r *http.Request) {
	var in protectionIn
	repo, branch, ok := a.decodeWrite(w, r, repoBranch, &in)
	if !ok {
		return
	}
	if in.RequiredContexts == nil {
		a.fail(w, r, httpx.Errorf(http.StatusBadRequest, `required_contexts is missing (a list of status contexts; [] requires none)`))
		return
	}
	contexts := *in.RequiredContexts
	if contexts == nil {
		contexts = []string{}
	}
	if err := validator.ValidateRequired(contexts); err != nil {
		a.fail(w, r, httpx.Errorf(http.StatusBadRequest, "%s", err))
		return
	}
	if err := a.Store.SetProtection(r.Context(), repo, branch, contexts); err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, protectionOut{Repo: repo, Branch: branch, RequiredContexts: contexts, Configured: true})
}

func (a *API) getProtection(w http.ResponseWriter, r *http.Request) {
	repo, branch, err := repoBranch(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	contexts, ok, err := a.Store.Protection(r.Context(), repo, branch)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !ok {
		contexts = append([]string{}, a.DefaultRequired...)
	}
	httpx.WriteJSON(w, http.StatusOK, protectionOut{Repo: repo, Branch: branch, RequiredContexts: contexts, Configured: ok})
}
