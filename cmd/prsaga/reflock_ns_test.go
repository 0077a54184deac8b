package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// TestMergerDiesHoldingARefLockInAContainer is issue 21's scenario end to
// end: a merger in its own pid namespace (`unshare --pid --fork
// --mount-proc`, as in a container) dies holding refs/heads/main.lock; a
// merger started again in a fresh namespace, with its own data directory
// on the same repositories directory, breaks the lock and the saga ends
// MERGED with exactly one merge commit.
func TestMergerDiesHoldingARefLockInAContainer(t *testing.T) {
	wrap := []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"}
	if out, err := exec.Command(wrap[0], append(wrap[1:], "true")...).CombinedOutput(); err != nil {
		t.Skipf("unshare --pid is not permitted here (%v: %s): this test needs root", err, strings.TrimSpace(string(out)))
	}
	const prs = 3
	pt := startProcTest(t, "builds the binary and runs four processes")
	ctx, dir, bin, procs, reposDir := pt.ctx, pt.dir, pt.bin, pt.procs, pt.reposDir
	reqs := prepareRepos(t, reposDir, prs, 1)
	extra := []string{"--merger-http", "", "--ack-wait", "2s"} // the dead merger's event comes back soon
	args := func(services, name string) []string {
		a, _ := pt.serveArgs(t, services, filepath.Join(dir, "proc", name), "", extra...) // own data dir and store
		return a
	}
	others := pt.serve(t, "services", "validator,notifier,indexer,ledger", filepath.Join(dir, "proc", "services"), "", extra...)
	procs.waitReady(ctx, others)
	noRequiredChecks(ctx, t, others.url, 1)

	// The first merger dies (as by SIGKILL: no clean-up) right after it
	// takes the lock of its first merge.
	dying := startInNamespace(t, procs, wrap, bin, "merger-1", []string{fault.Env + "=" + gitrepo.FaultRefLocked + "=exit"}, args("merger", "merger-1")...)
	b := pt.connect(t, "reflock-test")
	publishRequests(ctx, t, b, "urn:prsaga:reflock-test", reqs)
	select {
	case <-dying.done:
	case <-ctx.Done():
		t.Fatalf("merger-1 never hit its fault point: %s", logTail(dying.log, 8))
	}
	if status, ok := dying.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || status.ExitStatus() != fault.ExitCode {
		t.Fatalf("merger-1 ended %v, want the fault's exit %d: %s", dying.err, fault.ExitCode, logTail(dying.log, 8))
	}
	lock := filepath.Join(reposDir, repoOf(0)+".git", "refs", "heads", "main.lock")
	rec, err := os.ReadFile(lock)
	if err != nil {
		t.Fatalf("the dead merger's lock: %v", err)
	}
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if !strings.Contains(string(rec), "\npid=1\n") || strings.Contains(string(rec), "pidns="+ns+"\n") {
		t.Fatalf("the lock's record %q: want pid 1 of another pid namespace", rec)
	}

	// Restarted in a fresh namespace: it breaks the lock and merges all.
	startInNamespace(t, procs, wrap, bin, "merger-2", nil, args("merger", "merger-2")...)
	ledger := client.New(others.url, "")
	merged := waitMerged(ctx, t, procs, ledger, prs, dying)
	trailers := mainTrailers(t, reposDir, 1)
	for _, r := range reqs {
		if !merged[r.PRID].Merged {
			t.Errorf("%s: %+v, want MERGED", r.PRID, merged[r.PRID])
		}
		if n := trailers[r.PRID]; n != 1 {
			t.Errorf("%s: %d merge commits with its trailer, want exactly 1", r.PRID, n)
		}
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("main.lock after the run: %v; want it gone", err)
	}
}

// startInNamespace starts a `prsaga` process through wrap, with env added
// to its (PRSAGA_-free) environment, in procs.
func startInNamespace(t *testing.T, procs *procGroup, wrap []string, bin, name string, env []string, args ...string) *proc {
	t.Helper()
	p := procs.startArgv(name, env, append(append(append([]string{}, wrap...), bin), args...)...)
	// unshare ignores SIGTERM while it waits for its child: stop the child
	// (pid 1 of the namespace; unshare then exits with it) before
	// procs.stopAll would wait for unshare in vain. Cleanups run last
	// first, so this one runs before stopAll.
	t.Cleanup(func() {
		pid := p.cmd.Process.Pid
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					_ = syscall.Kill(n, syscall.SIGTERM)
				}
			}
		}
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill() // --kill-child takes the namespace with it
			<-p.done
		}
	})
	return p
}
