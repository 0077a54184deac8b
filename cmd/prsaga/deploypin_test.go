package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The NATS server that deployments run is the one the tests run: the
// nats-server module version of this module's go.mod, in compose's image,
// the k8s notes and the README.
func TestNATSServerVersionPinned(t *testing.T) {
	m := regexp.MustCompile(`github\.com/nats-io/nats-server/v2 v(\d+\.\d+\.\d+)`).FindStringSubmatch(readFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod does not require github.com/nats-io/nats-server/v2")
	}
	v := m[1]
	read := func(p string) string { return readFile(t, filepath.Join("..", "..", p)) }
	compose := read("deploy/docker-compose.yml")
	images := regexp.MustCompile(`image:\s*nats:(\S+)`).FindAllStringSubmatch(compose, -1)
	if len(images) == 0 {
		t.Fatal("deploy/docker-compose.yml runs no nats image")
	}
	for _, img := range images {
		if img[1] != v+"-alpine" && img[1] != v {
			t.Errorf("deploy/docker-compose.yml runs nats:%s; the tests run nats-server %s", img[1], v)
		}
	}
	for _, p := range []string{"deploy/k8s/kustomization.yaml", "README.md"} {
		if !strings.Contains(read(p), "nats-server "+v) {
			t.Errorf("%s does not name nats-server %s", p, v)
		}
	}
}
