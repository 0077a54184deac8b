package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
)

// TestOneOwnerPerDataDirectory runs prsaga as an operator might by
// mistake: a second `dev` on the data directory of a running one (on
// other ports), then `serve` and `nats` there, then a second `serve
// ledger` on the data directory of a running one. Each is refused at
// start, naming the owner's pid and where it listens; the owner keeps
// running and its dev.json stays. After the owner is SIGKILLed the kernel
// has dropped its locks: the same command starts again at once.
func TestOneOwnerPerDataDirectory(t *testing.T) {
	pt := startProcTest(t, "builds the binary and runs prsaga dev, nats and serve")
	ctx, dir, procs := pt.ctx, pt.dir, pt.procs

	data := filepath.Join(dir, "dev-data")
	info := filepath.Join(data, devInfoFile)
	dev := func(name string) *proc {
		addr := freeAddr(t)
		p := procs.start(pt.bin, name, "dev", "--quiet", "--data", data, "--repos", pt.reposDir,
			"--http", addr, "--nats-listen", "127.0.0.1:0", "--api-token", "", "--status-token", "")
		p.url = "http://" + addr
		return p
	}
	first := dev("dev-1")
	procs.waitReady(ctx, first)
	waitCond(t, 30*time.Second, "dev-1 writes "+info, func() bool { _, ok := readDevInfo(data); return ok })
	recorded := readFile(t, info)
	rec, _ := readDevInfo(data)

	owner := []string{"data directory " + data + " is in use", "pid " + strconv.Itoa(first.cmd.Process.Pid),
		"prsaga dev: http " + first.url + ", nats " + rec.NATSURL}
	refused(ctx, t, dev("dev-2"), owner...)
	refused(ctx, t, pt.serve(t, "serve-ledger-on-dev", "ledger", data, ""), owner...)
	refused(ctx, t, procs.start(pt.bin, "nats-on-dev", "nats", "--nats-listen", "127.0.0.1:0", "--data", data), owner...)
	procs.waitReady(ctx, first)
	if got := readFile(t, info); got != recorded {
		t.Errorf("dev.json after the refused processes:\n%s\nwant the first dev's:\n%s", got, recorded)
	}

	kill9(t, first)
	again := dev("dev-3")
	procs.waitReady(ctx, again)
	waitCond(t, 30*time.Second, "dev-3 records where it listens", func() bool {
		r, ok := readDevInfo(data)
		return ok && r.APIURL == again.url
	})

	// One service's processes on one data directory: the second is
	// refused; another service may share the directory.
	sdata := filepath.Join(dir, "serve-data")
	ledger := pt.serve(t, "ledger-1", "ledger", sdata, "")
	procs.waitReady(ctx, ledger)
	refused(ctx, t, pt.serve(t, "ledger-2", "ledger", sdata, ""),
		"data directory "+sdata+" is in use", "ledger held by pid "+strconv.Itoa(ledger.cmd.Process.Pid),
		"(prsaga serve ledger: http "+ledger.url+")")
	validator := pt.serve(t, "validator", "validator", sdata, "")
	procs.waitReady(ctx, validator)
	procs.waitReady(ctx, ledger)

	kill9(t, ledger)
	procs.waitReady(ctx, pt.serve(t, "ledger-3", "ledger", sdata, ""))
}

// refused waits for p to exit and checks it was refused: exit 1 and its
// output saying each of want.
func refused(ctx context.Context, t *testing.T, p *proc, want ...string) {
	t.Helper()
	select {
	case <-p.done:
	case <-ctx.Done():
		t.Fatalf("%s still runs; want it refused at start: %s", p.name, logTail(p.log, 8))
	}
	out := readFile(t, p.log)
	if code := p.cmd.ProcessState.ExitCode(); code != exitFailed {
		t.Errorf("%s exited %d, want %d: %s", p.name, code, exitFailed, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s's refusal lacks %q:\n%s", p.name, w, out)
		}
	}
}

// kill9 kills p as a crash would and waits for it.
func kill9(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// TestServeWarnsOfProcessDurability: `serve` on a listener off loopback
// with PRSAGA_DURABILITY=process warns at start, naming the setting of the
// address it listens on; with sync, or on loopback, it does not.
func TestServeWarnsOfProcessDurability(t *testing.T) {
	ns, _ := natstest.Start(t, bus.Config{})
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		warning string // the setting the warning names; "" for none
	}{
		{"process off loopback", map[string]string{"PRSAGA_HTTP_ADDR": "0.0.0.0:0", "PRSAGA_API_TOKEN": "t"}, nil, "PRSAGA_HTTP_ADDR"},
		{"service's own address off loopback", map[string]string{"PRSAGA_VALIDATOR_HTTP_ADDR": "0.0.0.0:0", "PRSAGA_API_TOKEN": "t"}, nil, "PRSAGA_VALIDATOR_HTTP_ADDR"},
		{"sync off loopback", map[string]string{"PRSAGA_HTTP_ADDR": "0.0.0.0:0", "PRSAGA_API_TOKEN": "t"}, []string{"--durability", "sync"}, ""},
		{"process on loopback", map[string]string{"PRSAGA_HTTP_ADDR": "127.0.0.1:0"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"PRSAGA_NATS_URL": ns.Addr(), "PRSAGA_DATA_DIR": t.TempDir()}
			for k, v := range tc.env {
				env[k] = v
			}
			ctx, cancel := context.WithCancel(context.Background())
			var out, errs logtest.Buffer
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, append([]string{"serve", "validator"}, tc.args...), func(k string) string { return env[k] }, &out, &errs)
			}()
			defer func() {
				cancel()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Error("serve did not stop")
				}
			}()
			// The warning comes before "serving": once that is logged, its
			// absence is final.
			waitCond(t, 30*time.Second, "serve logs serving", func() bool {
				select {
				case code := <-done:
					t.Fatalf("serve exited %d: %s", code, errs.String())
				default:
				}
				return len(out.Find(t, "serving")) > 0
			})
			warnings := out.Find(t, durabilityWarning)
			switch {
			case tc.warning == "" && len(warnings) != 0:
				t.Errorf("warned %v; want no warning", warnings)
			case tc.warning != "" && len(warnings) != 1:
				t.Errorf("%d warnings; want one:\n%s", len(warnings), out.String())
			case tc.warning != "" && (warnings[0]["setting"] != tc.warning || warnings[0]["level"] != "WARN" || warnings[0]["listen"] != "0.0.0.0:0"):
				t.Errorf("warning %v; want a WARN naming %s and 0.0.0.0:0", warnings[0], tc.warning)
			}
		})
	}
}
