package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.yaml.in/yaml/v3"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

var deployDir = filepath.Join("..", "..", "deploy")

// composeCommand finds a Compose client: the docker CLI's compose plugin,
// else the standalone docker-compose; nil when neither is installed.
func composeCommand() []string {
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	return nil
}

// `docker compose config` parses and interpolates deploy/docker-compose.yml
// (no engine needed). Without deploy/.env every secret is required.
func TestComposeConfig(t *testing.T) {
	// Every prsaga service runs with sync durability, read from the file
	// itself (anchors and merge keys resolved) with or without Compose.
	env := composeServiceEnv(t)
	if len(env) != len(stack.AllServices) {
		t.Errorf("compose runs `serve` for %d services, want %d", len(env), len(stack.AllServices))
	}
	for svc, e := range env {
		if e["PRSAGA_DURABILITY"] != "sync" {
			t.Errorf("compose service %s: PRSAGA_DURABILITY=%q, want sync (production survives a power loss)", svc, e["PRSAGA_DURABILITY"])
		}
	}

	cc := composeCommand()
	if cc == nil {
		t.Skip("no Compose client (neither the docker compose plugin nor docker-compose) to check deploy/docker-compose.yml with")
	}
	file := filepath.Join(deployDir, "docker-compose.yml")
	args := append(cc[1:], "-f", file, "--env-file", filepath.Join(deployDir, ".env.example"), "config")
	out, err := exec.Command(cc[0], args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s config: %v\n%s", strings.Join(cc, " "), err, out)
	}
	for _, want := range []string{"nats-1:", "nats-2:", "nats-3:", "ydb:", "validator:", "merger:", "notifier:", "indexer:", "ledger:",
		"PRSAGA_STORE: grpc://ydb:2136/local", "PRSAGA_STREAM_REPLICAS: '3'", "PRSAGA_DURABILITY: sync", "replicas: 2",
		"nats://ledger:change-me-ledger@nats-1:4222,nats://ledger:change-me-ledger@nats-2:4222,nats://ledger:change-me-ledger@nats-3:4222"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("compose config lacks %q", want)
		}
	}
	clean := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NATS_PASSWORD_") && !strings.HasPrefix(kv, "PRSAGA_") {
			clean = append(clean, kv)
		}
	}
	cmd := exec.Command(cc[0], append(cc[1:], "-f", file, "--env-file", os.DevNull, "config")...)
	cmd.Env = clean
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("compose config without secrets succeeded; want it to demand them:\n%.500s", out)
	}
}

// TestAccountsMatchRoutes: the saga subjects each user of
// deploy/nats/accounts.conf may publish are exactly the subjects
// contracts.PublishSubjects gives its service (the forge: the clients'
// prsaga.merge.requested), because the consumers take the producer from
// the subject (design §3) and the permissions are what make that true.
func TestAccountsMatchRoutes(t *testing.T) {
	for _, u := range []string{"validator", "merger", "notifier", "indexer", "ledger", "forge", "admin", "sys"} {
		t.Setenv("NATS_PASSWORD_"+strings.ToUpper(u), "pw-"+u)
	}
	t.Setenv("SERVER_NAME", "nats-1")
	opts, err := server.ProcessConfigFile(filepath.Join(deployDir, "nats", "nats-server.conf"))
	if err != nil {
		t.Fatalf("deploy/nats/nats-server.conf: %v", err)
	}
	allowed := map[string][]string{}
	for _, u := range opts.Users {
		if u.Permissions == nil || u.Permissions.Publish == nil {
			continue
		}
		for _, s := range u.Permissions.Publish.Allow {
			if strings.HasPrefix(s, "prsaga.") && !strings.HasPrefix(s, contracts.DLQSubjectPrefix) {
				allowed[u.Username] = append(allowed[u.Username], s)
			}
		}
	}
	want := map[string][]string{"forge": {contracts.SubjectMergeRequested}}
	for _, svc := range []string{contracts.ServiceValidator, contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceIndexer, contracts.ServiceLedger} {
		want[svc] = contracts.PublishSubjects(svc)
	}
	for user, subjects := range want {
		got := slices.Sorted(slices.Values(allowed[user]))
		if !slices.Equal(got, subjects) {
			t.Errorf("accounts.conf lets %s publish %v; its subjects are %v", user, got, subjects)
		}
	}
	for user := range allowed {
		if _, ok := want[user]; !ok {
			t.Errorf("accounts.conf lets %s publish saga subjects %v; only the services and the forge may", user, allowed[user])
		}
	}
}

// TestNATSClusterPermissions starts the 3-node cluster of deploy/nats in
// process (the same files; only addresses and directories are moved to
// this host) and checks design §11's permissions with the real bus code:
// each service user can create the streams (3 replicas) and its own
// consumers, publish its outputs and ack its messages, and nothing else;
// the forge may publish only merge requests.
func TestNATSClusterPermissions(t *testing.T) {
	if testing.Short() {
		t.Skip("forms a 3-node JetStream cluster")
	}
	users := []string{"validator", "merger", "notifier", "indexer", "ledger", "forge", "admin", "sys"}
	for _, u := range users {
		t.Setenv("NATS_PASSWORD_"+strings.ToUpper(u), "pw-"+u)
	}
	clusterAddrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	var routes []string
	for _, a := range clusterAddrs {
		routes = append(routes, "nats-route://"+a)
	}
	var clientURLs []string
	for i := range 3 {
		t.Setenv("SERVER_NAME", fmt.Sprintf("nats-%d", i+1))
		opts, err := server.ProcessConfigFile(filepath.Join(deployDir, "nats", "nats-server.conf"))
		if err != nil {
			t.Fatalf("deploy/nats/nats-server.conf: %v", err)
		}
		if i == 0 {
			if opts.Cluster.Name != "prsaga" || len(opts.Routes) != 3 || !opts.JetStream || opts.SystemAccount != "SYS" {
				t.Fatalf("config: cluster %q, %d routes, jetstream %v, system account %q; want prsaga, 3, true, SYS",
					opts.Cluster.Name, len(opts.Routes), opts.JetStream, opts.SystemAccount)
			}
		}
		if opts.ServerName != fmt.Sprintf("nats-%d", i+1) {
			t.Fatalf("server_name from $SERVER_NAME = %q", opts.ServerName)
		}
		opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", server.RANDOM_PORT, 0
		host, port, _ := strings.Cut(clusterAddrs[i], ":")
		opts.Cluster.Host = host
		fmt.Sscan(port, &opts.Cluster.Port)
		opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		opts.StoreDir = t.TempDir()
		opts.NoSigs, opts.NoLog = true, true
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatalf("nats-%d not ready", i+1)
		}
		clientURLs = append(clientURLs, s.ClientURL())
	}
	urlFor := func(user string) string {
		var us []string
		for _, u := range clientURLs {
			p, _ := url.Parse(u)
			p.User = url.UserPassword(user, "pw-"+user)
			us = append(us, p.String())
		}
		return strings.Join(us, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	connect := func(user string) *bus.Bus {
		t.Helper()
		b, err := bus.Connect(ctx, bus.Config{URL: urlFor(user), Name: user, Replicas: 3})
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(b.NC.Close) // no drain: nothing is left to flush, and a drain waits out pulls
		return b
	}
	publish := func(b *bus.Bus, subject string, wait time.Duration) error {
		pctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		h := nats.Header{}
		h.Set(bus.HeaderMsgID, fmt.Sprintf("%s-%d", subject, time.Now().UnixNano()))
		_, err := b.PublishMsg(pctx, &nats.Msg{Subject: subject, Header: h, Data: []byte("{}")})
		return err
	}

	// The first service creates the replicated streams once the cluster
	// has elected its JetStream leader.
	validator := connect("validator")
	formed := time.Now()
	for {
		// Each try is short: a request sent before the cluster has a
		// JetStream leader may get no answer at all.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := validator.EnsureStreams(sctx)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("streams with 3 replicas on the cluster: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("streams created with 3 replicas %s after the cluster started", time.Since(formed).Round(time.Millisecond))

	forge := connect("forge")
	if err := publish(forge, contracts.SubjectMergeRequested, 5*time.Second); err != nil {
		t.Fatalf("forge publishes a merge request: %v", err)
	}
	for _, subject := range []string{contracts.SubjectMergeValidated, contracts.ReplaySubject(contracts.TypeMergeRequested), contracts.StepFailedSubject("validator")} {
		if err := publish(forge, subject, time.Second); err == nil {
			t.Errorf("the forge published %s; only merge requests are allowed", subject)
		}
	}

	for _, c := range []struct {
		user      string
		consumers []bus.ConsumerSpec
		outputs   []string
		forbidden []string
	}{
		{"validator", []bus.ConsumerSpec{
			{Durable: contracts.ConsumerValidator, Subjects: contracts.SubjectsOf(contracts.TypeMergeRequested), GiveUp: true},
			{Durable: contracts.ConsumerValidatorLock, Subjects: []string{contracts.ReplaySubject(contracts.TypeMergeValidated), contracts.SubjectMerged, contracts.SubjectStepFailedAny, contracts.SubjectTimedOut}},
		}, []string{contracts.SubjectMergeValidated, contracts.StepFailedSubject("validator"), contracts.DLQSubject(contracts.ConsumerValidator)},
			[]string{contracts.SubjectMerged, contracts.SubjectMergeRequested, contracts.SubjectStateChanged, contracts.StepFailedSubject("merger")}},
		{"merger", []bus.ConsumerSpec{{Durable: contracts.ConsumerMerger, Subjects: []string{contracts.SubjectMergeValidated}, GiveUp: true}},
			[]string{contracts.SubjectMerged, contracts.StepFailedSubject("merger")},
			[]string{contracts.SubjectMergeValidated, contracts.SubjectNotified, contracts.StepFailedSubject("validator"), contracts.ReplaySubject(contracts.TypeMergeValidated)}},
		{"notifier", []bus.ConsumerSpec{{Durable: contracts.ConsumerNotifier, Subjects: contracts.SubjectsOf(contracts.TypeMerged), GiveUp: true}},
			[]string{contracts.SubjectNotified, contracts.StepFailedSubject("notifier")}, []string{contracts.SubjectMerged, contracts.SubjectIndexed, contracts.StepFailedSubject("indexer")}},
		{"indexer", []bus.ConsumerSpec{{Durable: contracts.ConsumerIndexer, Subjects: contracts.SubjectsOf(contracts.TypeNotified), GiveUp: true}},
			[]string{contracts.SubjectIndexed, contracts.StepFailedSubject("indexer")}, []string{contracts.SubjectNotified, contracts.SubjectTimedOut, "prsaga.merge.step_failed"}},
		{"ledger", []bus.ConsumerSpec{{Durable: contracts.ConsumerLedger, Subjects: []string{"prsaga.merge.>"}}},
			[]string{contracts.SubjectStateChanged, contracts.SubjectTimedOut, contracts.SubjectMergeRequested, contracts.ReplaySubject(contracts.TypeMergeValidated)},
			[]string{contracts.SubjectIndexed, contracts.SubjectMergeValidated, contracts.StepFailedSubject("merger")}},
	} {
		t.Run(c.user, func(t *testing.T) {
			b := validator
			if c.user != "validator" {
				b = connect(c.user)
			}
			if err := b.EnsureStreams(ctx); err != nil {
				t.Fatalf("ensure streams: %v", err)
			}
			for _, spec := range c.consumers {
				cons, err := b.Consumer(ctx, spec)
				if err != nil {
					t.Fatalf("consumer %s: %v", spec.Durable, err)
				}
				// Pull one message, if there is one, and ack it for sure.
				batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
				if err != nil {
					t.Fatalf("fetch from %s: %v", spec.Durable, err)
				}
				for m := range batch.Messages() {
					actx, cancel := context.WithTimeout(ctx, 3*time.Second)
					err := m.DoubleAck(actx)
					cancel()
					if err != nil {
						t.Errorf("ack on %s: %v", spec.Durable, err)
					}
				}
			}
			for _, s := range c.outputs {
				if err := publish(b, s, 5*time.Second); err != nil {
					t.Errorf("publish %s: %v", s, err)
				}
			}
			for _, s := range c.forbidden {
				// A denied publish gets no ack: it fails by timeout.
				err := publish(b, s, time.Second)
				if err == nil {
					t.Errorf("published %s, which is not %s's to publish", s, c.user)
				}
			}
			if c.forbidden != nil && !isPermissionError(b.NC.LastError()) {
				t.Errorf("last error %v, want a permissions violation", b.NC.LastError())
			}
		})
	}
	// The ledger reads other consumers' backlog for the watchdog.
	ledger := connect("ledger")
	if _, err := ledger.JS.Consumer(ctx, contracts.Stream, contracts.ConsumerMerger); err != nil {
		t.Errorf("ledger reads the merger's consumer: %v", err)
	}
	// A service cannot delete a stream.
	dctx, dcancel := context.WithTimeout(ctx, time.Second)
	defer dcancel()
	if err := ledger.JS.DeleteStream(dctx, contracts.Stream); err == nil {
		t.Error("the ledger user deleted stream PRSAGA")
	}
}

// composeServiceEnv is the environment of each service of
// deploy/docker-compose.yml that runs `prsaga serve`, by service name.
func composeServiceEnv(t *testing.T) map[string]map[string]string {
	t.Helper()
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(deployDir, "docker-compose.yml"))), &compose); err != nil {
		t.Fatalf("deploy/docker-compose.yml: %v", err)
	}
	out := map[string]map[string]string{}
	for name, svc := range compose.Services {
		if len(svc.Command) > 0 && svc.Command[0] == "serve" {
			out[name] = svc.Environment
		}
	}
	return out
}

// k8sEnv is the environment a Deployment's containers get from the
// ConfigMaps they name (deploy/k8s/config.yaml) and their own env, by
// container name: a value from a secret is "<secret>".
func k8sEnv(t *testing.T, manifest string) map[string]map[string]string {
	t.Helper()
	type kobj struct {
		Kind     string                `yaml:"kind"`
		Metadata struct{ Name string } `yaml:"metadata"`
		Data     map[string]string     `yaml:"data"`
		Spec     struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name    string `yaml:"name"`
						EnvFrom []struct {
							ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
						} `yaml:"envFrom"`
						Env []struct {
							Name      string         `yaml:"name"`
							Value     *string        `yaml:"value"`
							ValueFrom map[string]any `yaml:"valueFrom"`
						} `yaml:"env"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	docs := func(file string) []kobj {
		dec := yaml.NewDecoder(strings.NewReader(readFile(t, filepath.Join(deployDir, "k8s", file))))
		var out []kobj
		for {
			var o kobj
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				return out
			} else if err != nil {
				t.Fatalf("k8s/%s: %v", file, err)
			}
			out = append(out, o)
		}
	}
	configMaps := map[string]map[string]string{}
	for _, o := range docs("config.yaml") {
		if o.Kind == "ConfigMap" {
			configMaps[o.Metadata.Name] = o.Data
		}
	}
	out := map[string]map[string]string{}
	for _, o := range docs(manifest) {
		if o.Kind != "Deployment" {
			continue
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			env := map[string]string{}
			for _, from := range c.EnvFrom {
				if from.ConfigMapRef != nil {
					for k, v := range configMaps[from.ConfigMapRef.Name] {
						env[k] = v
					}
				}
			}
			for _, e := range c.Env {
				switch {
				case e.Value != nil:
					env[e.Name] = *e.Value
				case e.ValueFrom != nil:
					env[e.Name] = "<secret>"
				}
			}
			out[c.Name] = env
		}
	}
	return out
}

func isPermissionError(err error) bool {
	return err != nil && (errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(strings.ToLower(err.Error()), "permissions violation"))
}

// The Kubernetes manifests: every service a Deployment and a Service,
// probed on /healthz and /readyz, with resource requests; the indexer one
// replica replaced by Recreate (one index writer), the others two.
func TestKubernetesManifests(t *testing.T) {
	for _, c := range []struct {
		service  string
		replicas string
	}{{"validator", "2"}, {"merger", "2"}, {"notifier", "2"}, {"indexer", "1"}, {"ledger", "2"}} {
		m := readFile(t, filepath.Join(deployDir, "k8s", c.service+".yaml"))
		for _, want := range []string{"kind: Deployment", "kind: Service", "args: [serve, " + c.service + "]",
			"path: /healthz", "path: /readyz", "requests: {cpu: 100m, memory: 128Mi}", "replicas: " + c.replicas,
			"key: nats-url-" + c.service, "configMapRef: {name: prsaga-config}"} {
			if !strings.Contains(m, want) {
				t.Errorf("k8s/%s.yaml lacks %q", c.service, want)
			}
		}
		if (c.service == "indexer") != strings.Contains(m, "strategy: {type: Recreate}") {
			t.Errorf("k8s/%s.yaml: only the indexer is replaced with Recreate", c.service)
		}
		env := k8sEnv(t, c.service+".yaml")
		if len(env) == 0 {
			t.Errorf("k8s/%s.yaml: no container found", c.service)
		}
		for name, e := range env {
			if e["PRSAGA_DURABILITY"] != "sync" {
				t.Errorf("k8s/%s.yaml container %s: PRSAGA_DURABILITY=%q, want sync (production survives a power loss)", c.service, name, e["PRSAGA_DURABILITY"])
			}
		}
	}
	k := readFile(t, filepath.Join(deployDir, "k8s", "kustomization.yaml"))
	for _, f := range []string{"namespace.yaml", "config.yaml", "secret.yaml", "volumes.yaml", "validator.yaml", "merger.yaml", "notifier.yaml", "indexer.yaml", "ledger.yaml"} {
		if !strings.Contains(k, "- "+f) {
			t.Errorf("kustomization.yaml does not list %s", f)
		}
		if _, err := os.Stat(filepath.Join(deployDir, "k8s", f)); err != nil {
			t.Error(err)
		}
	}
}
