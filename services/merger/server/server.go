// Package server assembles the merger: the bare repositories under the
// repos dir and the consumer of validated events.
package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/merger"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// Options of the merger.
type Options struct {
	// DB is the merger's own database, opened with Migrations (SQLite) or
	// the merger's YDB migrations: it holds the merge journal.
	DB       store.DB
	ReposDir string
	// Committer signs merge commits; authors are the requesters.
	Committer gitrepo.Signature
	// AuthorDomain builds an author email from requested_by.
	AuthorDomain string
	// Sync is PRSAGA_DURABILITY=sync: objects and the ref's new value are
	// fsynced before the ref moves (gitrepo.Options.Sync).
	Sync bool
	Now  func() time.Time

	// onFsync observes the merger's fsyncs, for this package's tests.
	onFsync func(path string)
}

// Server is the assembled merger.
type Server struct {
	db store.DB
	m  *merger.Merger
}

// New opens the repos dir.
func New(opts Options) (*Server, error) {
	opts.Now = service.Clock(opts.Now)
	if opts.Committer.Name == "" {
		opts.Committer = gitrepo.Signature{Name: "prsaga", Email: "prsaga@localhost"}
	}
	if opts.AuthorDomain == "" {
		opts.AuthorDomain = "users.noreply.prsaga"
	}
	repos, err := gitrepo.NewReposWithOptions(opts.ReposDir, gitrepo.Options{Sync: opts.Sync, OnFsync: opts.onFsync})
	if err != nil {
		return nil, err
	}
	journal, err := JournalOf(opts.DB)
	if err != nil {
		return nil, err
	}
	g := &gitAdapter{repos: repos, journal: journal, committer: opts.Committer, domain: opts.AuthorDomain}
	return &Server{db: opts.DB, m: &merger.Merger{Git: g, Now: opts.Now}}, nil
}

// Spec is the merger's consumer.
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceMerger,
		DB:   s.db,
		Consumers: []service.Consumer{{
			Spec:   bus.ConsumerSpec{Durable: contracts.ConsumerMerger, Subjects: []string{contracts.SubjectMergeValidated}, GiveUp: true},
			Step:   contracts.StateMerging,
			Handle: s.m.OnValidated,
		}},
	}
}

// gitAdapter maps the merger's plan onto gitrepo and its errors back.
type gitAdapter struct {
	repos     *gitrepo.Repos
	journal   Journal
	committer gitrepo.Signature
	domain    string
}

func (g *gitAdapter) Merge(ctx context.Context, p merger.Plan) (merger.Result, error) {
	repo, err := g.repos.Open(p.Repo)
	if err != nil {
		return merger.Result{}, mapErr(err)
	}
	res, err := repo.Merge(ctx, gitrepo.MergeRequest{
		SourceBranch: p.SourceBranch, TargetBranch: p.TargetBranch, HeadSHA: p.HeadSHA,
		Strategy: p.Strategy, PRID: p.PRID, PRNumber: p.PRNumber,
		CorrelationID: p.CorrelationID, Title: p.Title,
		Author:    gitrepo.Signature{Name: p.RequestedBy, Email: p.RequestedBy + "@" + g.domain},
		Committer: g.committer,
		When:      p.When,
		Journal:   boundJournal{ctx: ctx, j: g.journal},
	})
	if err != nil {
		return merger.Result{}, mapErr(err)
	}
	return merger.Result{MergeSHA: res.MergeSHA, BaseSHA: res.BaseSHA, AlreadyMerged: res.AlreadyMerged, ChangedPaths: res.ChangedPaths}, nil
}

func mapErr(err error) error {
	var ce *gitrepo.ConflictError
	switch {
	case errors.As(err, &ce):
		return &merger.ConflictError{Paths: ce.Paths, Detail: ce.Reason}
	case errors.Is(err, gitrepo.ErrHeadMoved):
		return fmt.Errorf("%w: %v", merger.ErrHeadMoved, err)
	case errors.Is(err, gitrepo.ErrNotFastForward):
		return fmt.Errorf("%w: %v", merger.ErrNotFastForward, err)
	case errors.Is(err, gitrepo.ErrRepoNotFound), errors.Is(err, gitrepo.ErrBranchNotFound), errors.Is(err, gitrepo.ErrInvalid):
		return fmt.Errorf("%w: %v", merger.ErrNotFound, err)
	}
	return err
}
