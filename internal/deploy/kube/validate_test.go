package kube_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/runtime"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
)

// The schema validator, from PyPI, in a virtualenv of its own that `make
// kube-validate` installs under the per-user cache (its schemas of every
// Kubernetes release weigh 140 MB, which the analysis package has no use
// for).
const (
	kubeValidateVersion = "1.37.0"
	kubeValidateEnv     = "SVCLAB_KUBE_VALIDATE"
	// schemaVersion is the Kubernetes release svclab's k8s.io/api is.
	schemaVersion = "1.35.0"
)

func kubeValidatePath() string {
	if p := os.Getenv(kubeValidateEnv); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "svclab", "kubernetes-validate", kubeValidateVersion, "venv", "bin", "kubernetes-validate")
}

// istioKinds are the custom resources kubernetes-validate has no schema
// for: Istio's CRDs are not part of Kubernetes, so it warns and passes
// them. The run path's test registers Istio's CRDs with a real API server
// instead.
var istioKinds = regexp.MustCompile(`Couldn't find schema for kind (PeerAuthentication|Telemetry) with api version (security|telemetry)\.istio\.io/v1 `)

// TestManifestsValidate renders the first and the last design point of
// every spec in experiments/, and variants that turn on every object
// kind (Istio, the node selector, several generators, a Redis backing
// service), and validates
// them against the official JSON schemas of the Kubernetes release
// svclab's API types are, strictly (unknown fields are errors), with a
// validator that shares no code with svclab.
func TestManifestsValidate(t *testing.T) {
	bin := kubeValidatePath()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("kubernetes-validate is not installed (%v): run `make kube-validate`, or set %s", err, kubeValidateEnv)
	}
	specs, err := filepath.Glob("../../../experiments/*.toml")
	if err != nil || len(specs) == 0 {
		t.Fatalf("no specs in experiments/: %v", err)
	}
	dir := t.TempDir()
	var files []string
	write := func(name string, s *spec.Spec) {
		t.Helper()
		topo, err := runtime.Resolve(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		objs, err := kube.Render(s, topo, kube.RenderOptions{RunID: "validate"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		y, err := kube.YAML(objs)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(f, y, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for _, path := range specs {
		base := strings.TrimSuffix(filepath.Base(path), ".toml")
		s, err := spec.Load(path, "deploy.deployer=kube")
		if err != nil {
			t.Fatal(err)
		}
		d, err := experiment.NewDesign(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, len(d.Points) - 1} {
			rs, err := s.With(d.Levels(d.Points[i]))
			if err != nil {
				t.Fatal(err)
			}
			write(fmt.Sprintf("%s-%d", base, i+1), rs)
		}
	}
	variant, err := spec.Load("../../../experiments/s2-mesh.toml", "deploy.deployer=kube",
		"deploy.sidecar=istio", "deploy.mtls=true", "deploy.tracing=0.5",
		"deploy.kube.generators=3", `deploy.kube.node_selector={"kubernetes.io/hostname" = "vm2"}`)
	if err != nil {
		t.Fatal(err)
	}
	write("s2-mesh-istio", variant)
	ambient, err := variant.With(map[string]any{"deploy.proxy_mode": "node", "deploy.transport": "http"})
	if err != nil {
		t.Fatal(err)
	}
	write("s2-mesh-ambient-http", ambient)
	redisCart, err := spec.Load("../../../experiments/s0-boutique.toml", "deploy.deployer=kube", "app.cart_store=redis")
	if err != nil {
		t.Fatal(err)
	}
	write("s0-boutique-redis", redisCart)

	// About 20 s of CPU for the lot; the bound leaves room for a machine
	// shared with other work.
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"-k", schemaVersion, "--strict", "--quiet"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubernetes-validate: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && !istioKinds.MatchString(line) {
			t.Errorf("kubernetes-validate: %s", line)
		}
	}
	t.Logf("%d manifests valid against Kubernetes %s", len(files), schemaVersion)
}
