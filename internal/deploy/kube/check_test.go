package kube

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// TestResolveChecksKubeSpec: what the kube deployer cannot do, and what
// only a render found before, fails in deploy.Resolve, where `svclab plan`
// and a run check a spec before anything starts, located at file, line and
// key.
func TestResolveChecksKubeSpec(t *testing.T) {
	for _, tt := range []struct {
		name, extra, want string
	}{
		{"faults", "[deploy.faults.reset]\ntarget = \"hop2\"\nfraction = 0.1\n[deploy.faults.link_cut]\ntarget = \"hop2\"\nstart = \"1s\"\nduration = \"1s\"\n",
			`k.toml:8: deploy.faults.reset: the kube deployer cannot inject faults`},
		{"kill", "[deploy.faults.kill]\ntarget = \"hop3\"\nstart = \"1s\"\n",
			`k.toml:8: deploy.faults.kill: the kube deployer cannot inject faults`},
		{"unknown group", "[deploy.hosts.vm1]\ngroups = [\"hop9\"]\n",
			`k.toml:9: deploy.hosts.vm1.groups: placement split has no group "hop9"`},
		{"group on two hosts", "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\n[deploy.hosts.vm2]\ngroups = [\"hop2\", \"hop1\"]\n",
			`k.toml:11: deploy.hosts.vm2.groups: group "hop1" is on two hosts, vm1 and vm2`},
		{"selector sets the host label", "[deploy.kube.node_selector]\n\"svclab.dev/host\" = \"x\"\n[deploy.hosts.vm1]\ngroups = [\"hop1\"]\n",
			`k.toml:9: deploy.kube.node_selector."svclab.dev/host": svclab.dev/host places the groups of [deploy.hosts]`},
		// The API's counts are int32: a larger one rendered wrapped
		// (2^32+2 replicas as 2, maxReplicas 2^31 negative).
		{"replicas past int32", "[deploy.replicas]\nhop2 = 4294967298\n",
			`k.toml:9: deploy.replicas.hop2: must be at most 2147483647, the largest count a Kubernetes Deployment or HorizontalPodAutoscaler holds (int32), got 4294967298`},
		{"autoscale max past int32", "[deploy.autoscale.hop2]\nmin = 1\nmax = 2147483648\ncpu_target = 50\n",
			`k.toml:10: deploy.autoscale.hop2.max: must be at most 2147483647`},
		{"both, at once", "[deploy.replicas]\nhop1 = 4294967298\n[deploy.autoscale.hop2]\nmin = 1\nmax = 2147483648\ncpu_target = 50\n",
			"k.toml:9: deploy.replicas.hop1: must be at most 2147483647, the largest count a Kubernetes Deployment or HorizontalPodAutoscaler holds (int32), got 4294967298\nk.toml:12: deploy.autoscale.hop2.max: must be at most"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := spec.Parse("k.toml", []byte(chainSplit+tt.extra), "deploy.deployer=kube")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = deploy.Resolve(s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Errorf("%T is no *spec.Error, so `svclab plan` would not exit 2", err)
			}
		})
	}
}

// localDeployer stands for a deployer that runs everything on this
// machine: Resolve checks its programs, and it never deploys.
type localDeployer struct{}

func (localDeployer) Name() string { return "kube-test-local" }

func (localDeployer) Traits() deploy.Traits { return deploy.Traits{} }

func (localDeployer) Deploy(context.Context, *runtime.Topology, deploy.Options) (deploy.Deployment, error) {
	return nil, errors.New("kube-test-local cannot deploy")
}

func init() { deploy.Register(localDeployer{}) }

// TestResolveKubeNeedsNoLocalPrograms: the pods run the database, the
// proxies and the mesh's backends from images, so a kube spec resolves on
// a machine without the programs a local deployer would start.
func TestResolveKubeNeedsNoLocalPrograms(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv(deploy.JaegerEnv, missing)
	t.Setenv(deploy.PrometheusEnv, missing)
	t.Setenv("PATH", "")
	for _, tt := range []struct {
		name, src string
		local     string // what a local deployer reports missing; "" to skip
	}{
		{"mesh", chainSplit + "tracing = 0.5\nmetrics = true\n", "deploy.tracing: tracing needs Jaeger"},
		{"istio", chainSplit + "sidecar = \"istio\"\n", ""},
		{"redis cart", "[app]\nname = \"boutique\"\ncart_store = \"redis\"\n[deploy]\ntransport = \"grpc\"\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := spec.Parse("k.toml", []byte(tt.src), "deploy.deployer=kube")
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := deploy.Resolve(s); err != nil {
				t.Errorf("kube: %v", err)
			}
			if tt.local == "" {
				return
			}
			// The same spec on a local deployer does need them, which
			// makes the kube case a test of the seam.
			s, err = spec.Parse("k.toml", []byte(tt.src), "deploy.deployer=kube-test-local")
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := deploy.Resolve(s); err == nil || !strings.Contains(err.Error(), tt.local) {
				t.Errorf("local deployer: error %v, want %q", err, tt.local)
			}
		})
	}
}
