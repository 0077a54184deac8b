package bench

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/sample"
	"github.com/prsaga/prsaga/contracts"
)

// pr is one saga of the workload.
type pr struct {
	i      int
	repo   string // bench/rNN
	id     string // <repo>#<i+1>
	source string // pr/<i>
	target string // W1 base/<i>, W2 main
	file   string // f_<i>.txt, the one file the PR adds
	head   string // the PR's one commit
}

// repoName is the name of repository k of the run.
func repoName(k int) string { return fmt.Sprintf("bench/r%02d", k) }

// prepare creates the workload's repositories under reposDir (BENCH.md):
// main holds one commit with a README; PR i's branch pr/i holds one commit
// adding f_i.txt on top of it; in W1 base/i points at the initial commit.
// Repositories are written in parallel (one writer per repository).
func prepare(ctx context.Context, reposDir, workload string, n, repos int) ([]pr, error) {
	prs := make([]pr, n)
	g := newGroup(ctx, 4)
	for k := 0; k < repos; k++ {
		g.Go(func(ctx context.Context) error {
			name := repoName(k)
			r, err := sample.Init(reposDir, name)
			if err != nil {
				return err
			}
			initial, err := r.Commit("main", plumbing.ZeroHash, map[string]string{"README.md": "# " + name + "\n"}, "Initial commit")
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			for i := k; i < n; i += repos {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				p := pr{
					i: i, repo: name, id: contracts.PRID(name, i+1),
					source: "pr/" + strconv.Itoa(i), target: "main", file: "f_" + strconv.Itoa(i) + ".txt",
				}
				if workload == W1 {
					p.target = "base/" + strconv.Itoa(i)
					if err := r.SetBranch(p.target, initial); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
				}
				h, err := r.Commit(p.source, initial, map[string]string{p.file: "file " + strconv.Itoa(i) + " of the benchmark\n"}, "Add "+p.file)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				p.head = h.String()
				prs[i] = p
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("prepare repositories: %w", err)
	}
	return prs, nil
}

// request is PR p's merge request.
func (p pr) request(workload string) contracts.Request {
	strategy := contracts.StrategyMerge
	if workload == W1 {
		strategy = contracts.StrategyFastForward
	}
	return contracts.Request{
		PRID: p.id, Repo: p.repo, PRNumber: p.i + 1,
		SourceBranch: p.source, TargetBranch: p.target, HeadSHA: p.head,
		Strategy: strategy, Title: "Add " + p.file, RequestedBy: "bench",
	}
}
