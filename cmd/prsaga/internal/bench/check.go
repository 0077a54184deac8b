package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// trailerPR is the trailer the merger writes into merge commits (design §6).
const trailerPR = "Prsaga-PR"

// outcome is what the world says about one PR after the run.
type outcome struct {
	// at is when the ledger recorded each of stepStates (zero: never).
	// Only these times are kept of the saga the ledger returned: the
	// benchmark holds an outcome per saga while the services still run,
	// and at N=10,000 whole sagas with their transitions added tens of
	// megabytes to the run's peak RSS.
	at      [len(stepStates)]time.Time
	ledger  string // "" when the ledger has the run MERGED
	git     string // "" when the repository shows the PR merged exactly once
	fetched bool
}

func (o outcome) ok() bool { return o.fetched && o.ledger == "" && o.git == "" }

// readLedger fetches every PR's saga (row and transitions) from the
// ledger's API and checks it is this run's and MERGED.
func readLedger(ctx context.Context, c *client.Client, d *driver, out []outcome) error {
	g := newGroup(ctx, 8)
	for i := range d.prs {
		g.Go(func(ctx context.Context) error {
			s, err := c.Saga(ctx, d.prs[i].id)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				out[i].ledger = "ledger: " + err.Error()
				return nil
			}
			out[i].at, out[i].fetched = stepTimes(s.Transitions), true
			switch {
			case s.CorrelationID != d.ids[i]:
				out[i].ledger = fmt.Sprintf("ledger: run %s, want %s", s.CorrelationID, d.ids[i])
			case s.State != contracts.StateMerged || !s.Merged:
				out[i].ledger = fmt.Sprintf("ledger: %s (failed step %q: %s)", s.State, s.FailedStep, s.LastError)
			case d.workload == W1 && s.MergeSHA != d.prs[i].head:
				out[i].ledger = fmt.Sprintf("ledger: merge sha %s, want the PR head %s (fast-forward)", s.MergeSHA, d.prs[i].head)
			}
			return nil
		})
	}
	return g.Wait()
}

// stepTimes is when each of stepStates was recorded: the last recorded
// (not inferred) transition into it.
func stepTimes(ts []client.Transition) (at [len(stepStates)]time.Time) {
	for _, t := range ts {
		if t.Inferred {
			continue
		}
		for k, s := range stepStates {
			if t.To == s {
				at[k] = t.At
			}
		}
	}
	return at
}

// checkGit checks the repositories (BENCH.md): W1 every base/i equals its
// PR's head; W2 every main holds all its PRs' files and exactly one commit
// carrying each PR's Prsaga-PR trailer. Problems not attributable to one PR
// (a trailer of an unknown PR) are returned.
func checkGit(reposDir, workload string, prs []pr, repos int, out []outcome) ([]string, error) {
	var mu sync.Mutex
	var problems []string
	g := newGroup(context.Background(), 4)
	for k := 0; k < repos; k++ {
		g.Go(func(context.Context) error {
			name := repoName(k)
			r, err := git.PlainOpen(filepath.Join(reposDir, filepath.FromSlash(name)+".git"))
			if err != nil {
				return fmt.Errorf("open %s: %w", name, err)
			}
			var mine []int
			for i := k; i < len(prs); i += repos {
				mine = append(mine, i)
			}
			var extra []string
			if workload == W1 {
				checkW1(r, prs, mine, out)
			} else {
				extra, err = checkW2(r, name, prs, mine, out)
				if err != nil {
					return err
				}
			}
			mu.Lock()
			problems = append(problems, extra...)
			mu.Unlock()
			return nil
		})
	}
	return problems, g.Wait()
}

func checkW1(r *git.Repository, prs []pr, mine []int, out []outcome) {
	for _, i := range mine {
		ref, err := r.Reference(plumbing.NewBranchReferenceName(prs[i].target), true)
		switch {
		case err != nil:
			out[i].git = fmt.Sprintf("git: %s: %v", prs[i].target, err)
		case ref.Hash().String() != prs[i].head:
			out[i].git = fmt.Sprintf("git: %s is %s, want the PR head %s", prs[i].target, ref.Hash(), prs[i].head)
		}
	}
}

func checkW2(r *git.Repository, name string, prs []pr, mine []int, out []outcome) ([]string, error) {
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return nil, fmt.Errorf("%s main: %w", name, err)
	}
	head, err := r.CommitObject(ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("%s main: %w", name, err)
	}
	tree, err := head.Tree()
	if err != nil {
		return nil, fmt.Errorf("%s main tree: %w", name, err)
	}
	carried := map[string]int{} // PR id -> commits on main carrying its trailer
	iter, err := r.Log(&git.LogOptions{From: head.Hash})
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	err = iter.ForEach(func(c *object.Commit) error {
		for _, id := range trailerValues(c.Message, trailerPR) {
			carried[id]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	for _, i := range mine {
		var why []string
		if _, err := tree.FindEntry(prs[i].file); err != nil {
			why = append(why, prs[i].file+" not in main")
		}
		if n := carried[prs[i].id]; n != 1 {
			why = append(why, fmt.Sprintf("%d commits on main carry its trailer, want 1", n))
		}
		delete(carried, prs[i].id)
		if len(why) > 0 {
			out[i].git = "git: " + strings.Join(why, "; ")
		}
	}
	var problems []string
	for id, n := range carried {
		problems = append(problems, fmt.Sprintf("%s: %d commits on main carry the trailer of %s, which the benchmark never requested", name, n, id))
	}
	return problems, nil
}

// trailerValues returns the values of "key: value" lines in a commit
// message's last paragraph, where git keeps trailers.
func trailerValues(msg, key string) []string {
	msg = strings.TrimRight(strings.ReplaceAll(msg, "\r\n", "\n"), "\n ")
	if i := strings.LastIndex(msg, "\n\n"); i >= 0 {
		msg = msg[i+2:]
	}
	var out []string
	for _, line := range strings.Split(msg, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, " \t"), key+": "); ok {
			out = append(out, v)
		}
	}
	return out
}
