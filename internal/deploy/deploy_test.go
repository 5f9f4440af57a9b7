package deploy_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
)

// named is a deployer that only has a name: these tests check the registry
// and Resolve, which never deploy.
type named string

func (n named) Name() string { return string(n) }

func (n named) Traits() deploy.Traits { return deploy.Traits{} }

func (n named) Deploy(context.Context, *runtime.Topology, deploy.Options) (deploy.Deployment, error) {
	return nil, errors.New(string(n) + " cannot deploy")
}

func init() {
	deploy.Register(named("test-b"))
	deploy.Register(named("test-a"))
}

func TestRegistry(t *testing.T) {
	if got := deploy.Names(); !slices.Equal(got, []string{"test-a", "test-b"}) {
		t.Errorf("Names() = %v, want [test-a test-b], sorted", got)
	}
	d, err := deploy.Lookup("test-a")
	if err != nil || d.Name() != "test-a" {
		t.Errorf("Lookup(test-a) = %v, %v", d, err)
	}
	_, err = deploy.Lookup("kube")
	if err == nil || !strings.Contains(err.Error(), `unknown deployer "kube" (known: test-a, test-b)`) {
		t.Errorf("Lookup(kube) error = %v, want it to name the deployer and list the known ones", err)
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name, src string
		levels    map[string]any
		deployer  string // the one resolved, or "" for an error
		key       string
		line      int
		msg       string
	}{
		{name: "named", src: "[app]\nname = \"chain\"\n[deploy]\ndeployer = \"test-b\"\nplacement = \"split\"\n", deployer: "test-b"},
		{name: "unknown", src: "[app]\nname = \"chain\"\n\n[deploy]\ndeployer = \"kube\"\n",
			key: "deploy.deployer", line: 5, msg: `unknown deployer "kube" (known: test-a, test-b)`},
		{name: "default is local", src: "[app]\nname = \"chain\"\n[deploy]\ntransport = \"http\"\n",
			key: "deploy.deployer", line: 3, msg: `unknown deployer "local"`},
		// A factor's level is located at the factor.
		{name: "factor", src: "[app]\nname = \"chain\"\n[deploy]\ndeployer = \"test-a\"\n[experiment.factors]\n\"deploy.deployer\" = [\"test-a\", \"moon\"]\n",
			levels: map[string]any{"deploy.deployer": "moon"},
			key:    "deploy.deployer", line: 6, msg: `unknown deployer "moon"`},
		// The deployer is checked first, then the topology.
		{name: "bad placement", src: "[app]\nname = \"chain\"\n[deploy]\ndeployer = \"test-a\"\nplacement = \"halves\"\n",
			key: "deploy.placement", line: 5, msg: `unknown placement "halves"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("s.toml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if tc.levels != nil {
				if s, err = s.With(tc.levels); err != nil {
					t.Fatal(err)
				}
			}
			d, topo, err := deploy.Resolve(s)
			if tc.deployer != "" {
				if err != nil || d.Name() != tc.deployer || topo == nil || len(topo.Groups) != 3 {
					t.Fatalf("Resolve = %v, %+v, %v; want deployer %s and chain's split topology", d, topo, err, tc.deployer)
				}
				return
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want a *spec.Error", err, err)
			}
			if se.File != "s.toml" || se.Key != tc.key || se.Line != tc.line || !strings.Contains(se.Error(), tc.msg) {
				t.Errorf("got %q (key %q line %d), want s.toml key %q line %d containing %q", se.Error(), se.Key, se.Line, tc.key, tc.line, tc.msg)
			}
		})
	}
}

// TestResolveMachineSizes: a deployer that runs everything here is held
// to this machine's cores, memory and processes, each at its key, all at
// once; a million replicas planned fine before, and failed only when the
// run had started them.
func TestResolveMachineSizes(t *testing.T) {
	const head = "[app]\nname = \"chain\"\n[deploy]\ndeployer = \"test-a\"\nplacement = \"split\"\n" // 5 lines
	most := deploy.MaxReplicas()
	for _, tc := range []struct {
		name, src string
		want      []string // one error each, in order; none for no error
	}{
		{"fits", head + fmt.Sprintf("[deploy.replicas]\nhop2 = %d\n", most), nil},
		{"cpu above the cores", head + fmt.Sprintf("[deploy.resources.hop1]\ncpu = %d\n", goruntime.NumCPU()+1),
			[]string{fmt.Sprintf("s.toml:7: deploy.resources.hop1.cpu: must be a number of cores from 0.01 to this machine's %d", goruntime.NumCPU())}},
		{"memory above the machine's", head + "[deploy.resources.hop1]\nmemory = \"1PiB\"\n",
			[]string{"s.toml:7: deploy.resources.hop1.memory: must be a size from 8MiB to this machine's"}},
		{"a million replicas", head + "[deploy.replicas]\nhop2 = 1000000\n",
			[]string{fmt.Sprintf("s.toml:7: deploy.replicas.hop2: must be at most %d processes, got 1000000: each replica is a process that needs 8MiB to start", most)}},
		{"autoscale max and replicas, at once", head + fmt.Sprintf("[deploy.replicas]\nhop1 = %d\n[deploy.autoscale.hop2]\nmin = 1\nmax = %d\ncpu_target = 50\n", most+1, most+1),
			[]string{fmt.Sprintf("s.toml:7: deploy.replicas.hop1: must be at most %d processes, got %d", most, most+1),
				fmt.Sprintf("s.toml:10: deploy.autoscale.hop2.max: must be at most %d processes, got %d", most, most+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("s.toml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = deploy.Resolve(s)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				return
			}
			errs := spec.Unjoin(err)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.want), err)
			}
			for i, e := range errs {
				var se *spec.Error
				if !errors.As(e, &se) || !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d = %v (%T), want a *spec.Error starting %q", i, e, e, tc.want[i])
				}
			}
		})
	}
}

// TestResolveIstioNeedsACluster: Istio's sidecars are a cluster's, so a
// deployer that runs everything here refuses deploy.sidecar = "istio" at
// its key, however it is set; inproc, which has no hop, is refused by the
// spec for every sidecar.
func TestResolveIstioNeedsACluster(t *testing.T) {
	const head = "[app]\nname = \"chain\"\n[deploy]\ndeployer = \"test-a\"\n"
	const onCluster = `deploy.sidecar: sidecar "istio" runs only on a Kubernetes cluster: set deploy.deployer = "kube"`
	for _, tc := range []struct {
		name, src string
		levels    map[string]any
		want      string
	}{
		{"written", head + "placement = \"split\"\nsidecar = \"istio\"\n", nil, "s.toml:6: " + onCluster},
		{"by a factor", head + "placement = \"split\"\n[experiment.factors]\n\"deploy.sidecar\" = [\"none\", \"istio\"]\n",
			map[string]any{"deploy.sidecar": "istio"}, "s.toml:7: " + onCluster},
		{"inproc", head + "transport = \"inproc\"\nsidecar = \"istio\"\n", nil, `s.toml:6: deploy.sidecar: sidecar "istio" needs a network transport`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("s.toml", []byte(tc.src))
			if err == nil && tc.levels != nil {
				s, err = s.With(tc.levels)
			}
			if err == nil {
				_, _, err = deploy.Resolve(s)
			}
			var se *spec.Error
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v (%T), want a *spec.Error starting %q", err, err, tc.want)
			}
		})
	}
}

func TestExitError(t *testing.T) {
	e := &deploy.ExitError{
		Process: deploy.ProcessInfo{Name: "hop2", Group: "hop2", Role: deploy.RoleHost, Components: []string{"hop2", "hop3"}, PID: 42},
		Status:  "exit status 1",
		Tail:    []string{"starting", "component hop3: failing at start"},
	}
	want := "group hop2 (components hop2, hop3, pid 42) exited: exit status 1; last output:\n  starting\n  component hop3: failing at start"
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := e.StderrTails()["hop2"]; got != "starting\ncomponent hop3: failing at start" {
		t.Errorf("StderrTails()[hop2] = %q", got)
	}
	e.Process.Name, e.Tail = "hop2-1", nil
	if got := e.Error(); !strings.HasPrefix(got, "process hop2-1 of group hop2 (") || !strings.HasSuffix(got, "last output:\n  (no output)") {
		t.Errorf("a replica without output: %q", got)
	}
}
