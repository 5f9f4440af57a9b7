package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

func TestDecideIsolation(t *testing.T) {
	cpus, err := cgroup.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	_, cgErr := cgroup.Detect()
	for _, c := range []struct {
		name, isolation string
	}{{"left out", ""}, {"cpuset", `isolation = "cpuset"`}, {"none", `isolation = "none"`}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := spec.Parse("i.toml", []byte("[app]\nname = \"chain\"\n[experiment]\n"+c.isolation+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			iso, err := DecideIsolation(s, &log)
			canSplit := cgErr == nil && len(cpus) >= 2
			switch {
			case c.name == "none" || (c.name == "left out" && !canSplit):
				if err != nil || iso.Mode != "none" || iso.LoadgenCPUs != cgroup.List(cpus) || iso.SUTCores != len(cpus) {
					t.Errorf("got %+v, %v; want none over %v", iso, err, cpus)
				}
				if c.name == "left out" && !strings.Contains(log.String(), "notice") {
					t.Errorf("no notice on falling back to none: %q", log.String())
				}
			case !canSplit: // "cpuset" written where it cannot be had
				var se *spec.Error
				if !errors.As(err, &se) || se.Key != "experiment.isolation" || se.Line != 4 {
					t.Errorf("got %v, want an error at experiment.isolation, line 4", err)
				}
			default:
				gen, sut, _ := cgroup.Split(cpus)
				if err != nil || iso.Mode != "cpuset" || iso.LoadgenCPUs != cgroup.List(gen) || iso.SUTCPUs != cgroup.List(sut) ||
					iso.LoadgenCores+iso.SUTCores != len(cpus) {
					t.Errorf("got %+v, %v; want cpuset %v | %v", iso, err, gen, sut)
				}
				if !strings.Contains(log.String(), "isolation: the load generator runs on CPU "+cgroup.List(gen)) {
					t.Errorf("no isolation line: %q", log.String())
				}
			}
		})
	}
}

// TestIsolationEnter: under cpuset the calling process runs on the
// generator's CPUs until it leaves, and the group is gone after.
func TestIsolationEnter(t *testing.T) {
	s, _ := spec.Parse("i.toml", []byte("[app]\nname = \"chain\"\n"))
	iso, err := DecideIsolation(s, &bytes.Buffer{})
	if err != nil || iso.Mode != "cpuset" {
		t.Skipf("no cpuset isolation here: %+v, %v", iso, err)
	}
	before, _ := cgroup.Allowed()
	leave, err := iso.Enter()
	if err != nil {
		t.Fatal(err)
	}
	during, _ := cgroup.Allowed()
	if got := goruntime.GOMAXPROCS(0); got != iso.LoadgenCores+1 {
		t.Errorf("GOMAXPROCS %d inside the generator's cpuset, want its %d cores + 1", got, iso.LoadgenCores)
	}
	// What starts under AsSUT stays on the system under test's CPUs after
	// the generator has gone back to its own.
	var kid *exec.Cmd
	if err := iso.AsSUT(func() error {
		if got, _ := cgroup.Allowed(); cgroup.List(got) != iso.SUTCPUs {
			t.Errorf("inside AsSUT on CPUs %v, want %s", got, iso.SUTCPUs)
		}
		kid = exec.Command("sh", "-c", "sleep 0.3; exec sleep 30")
		return kid.Start()
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kid.Process.Kill(); _ = kid.Wait() })
	if got, _ := cgroup.Allowed(); cgroup.List(got) != iso.LoadgenCPUs {
		t.Errorf("after AsSUT the generator runs on %v, want %s", got, iso.LoadgenCPUs)
	}
	time.Sleep(600 * time.Millisecond) // past the move back, and the child's own exec
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", kid.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`Cpus_allowed_list:\s*(\S+)`).FindSubmatch(status); m == nil || string(m[1]) != iso.SUTCPUs {
		t.Errorf("a process started under AsSUT runs on CPUs %q, want the system under test's %s", m, iso.SUTCPUs)
	}
	if err := leave(); err != nil {
		t.Fatal(err)
	}
	after, _ := cgroup.Allowed()
	if cgroup.List(during) != iso.LoadgenCPUs || cgroup.List(after) != cgroup.List(before) {
		t.Errorf("CPUs before %v, during %v (want %s), after %v", before, during, iso.LoadgenCPUs, after)
	}
	_ = cgroup.RemoveOwn()
}

// remoteDeployer stands for a deployer whose processes run elsewhere (the
// kube deployer, which this package cannot import).
type remoteDeployer struct{}

func (remoteDeployer) Name() string          { return "test-remote" }
func (remoteDeployer) Traits() deploy.Traits { return deploy.Traits{Remote: true} }
func (remoteDeployer) Deploy(context.Context, *runtime.Topology, deploy.Options) (deploy.Deployment, error) {
	return nil, errors.New("test-remote deploys nothing")
}

func init() { deploy.Register(remoteDeployer{}) }

// TestDecideIsolationRemote: with a deployer that runs elsewhere, limits
// and isolation are the cluster's, so neither this machine's cgroups are
// asked for nor is the load generator moved onto a cpuset, even where
// "cpuset" is written and could be had here.
func TestDecideIsolationRemote(t *testing.T) {
	s, err := spec.Parse("r.toml", []byte(`[app]
name = "chain"
[deploy]
deployer = "test-remote"
[deploy.resources.hop1]
cpu = 0.5
[experiment]
isolation = "cpuset"
`))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	iso, err := DecideIsolation(s, &log)
	if err != nil || iso.Mode != spec.IsolationNone || !strings.Contains(iso.Reason, "test-remote deployer") {
		t.Errorf("got %+v, %v; want none, the deployer named as the reason", iso, err)
	}
	if iso.SUTCores != 0 || iso.LoadgenCores != 0 || iso.SUTCPUs != "" {
		t.Errorf("got %+v; this machine's CPUs are not what a cluster's pods share", iso)
	}
	if log.Len() != 0 {
		t.Errorf("logged %q; a remote run's isolation is not this machine's", log.String())
	}
}

// TestTelemetryCPUs: the telemetry backends get the generator's CPUs only
// when a run asks for them and the CPUs are split.
func TestTelemetryCPUs(t *testing.T) {
	split := &Isolation{Mode: spec.IsolationCPUSet, LoadgenCPUs: "0", SUTCPUs: "1-3"}
	shared := &Isolation{Mode: spec.IsolationNone, LoadgenCPUs: "0-3", SUTCPUs: "0-3"}
	for _, c := range []struct {
		iso   *Isolation
		where string
		want  string
	}{
		{split, spec.TelemetryCPUsGenerator, "0"},
		{split, spec.TelemetryCPUsSystem, ""},
		{shared, spec.TelemetryCPUsGenerator, ""},
		{nil, spec.TelemetryCPUsGenerator, ""},
	} {
		if got := c.iso.TelemetryCPUs(c.where); got != c.want {
			t.Errorf("%+v, %q: %q, want %q", c.iso, c.where, got, c.want)
		}
	}
}

// TestTelemetryOnGeneratorNotice: where the CPUs cannot be split, a spec
// that asks for the backends on the generator's CPUs, in a factor level,
// is told that they share every CPU.
func TestTelemetryOnGeneratorNotice(t *testing.T) {
	s, err := spec.Parse("i.toml", []byte("[app]\nname = \"chain\"\n[experiment.factors]\n\"deploy.telemetry_cpus\" = [\"system\", \"generator\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !telemetryOnGenerator(s) {
		t.Error("a factor level of generator is not seen")
	}
	plain, _ := spec.Parse("i.toml", []byte("[app]\nname = \"chain\"\n"))
	if telemetryOnGenerator(plain) {
		t.Error("the default asks for the generator's CPUs")
	}
}

// TestDeployOptions: what every deployment of a prepared run is given
// (run and capacity alike), the telemetry backends' CPUs included.
func TestDeployOptions(t *testing.T) {
	s, err := spec.Parse("i.toml", []byte("[app]\nname = \"chain\"\n[deploy]\ntracing = 1.0\ntelemetry_cpus = \"generator\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	pr := &Prepared{Spec: s}
	split := &Isolation{Mode: spec.IsolationCPUSet, LoadgenCPUs: "0", SUTCPUs: "1-3"}
	if o := pr.DeployOptions(split); o.CPUs != "1-3" || o.TelemetryCPUs != "0" {
		t.Errorf("split: CPUs %q, telemetry %q; want 1-3 and 0", o.CPUs, o.TelemetryCPUs)
	}
	if o := pr.DeployOptions(&Isolation{Mode: spec.IsolationNone}); o.CPUs != "" || o.TelemetryCPUs != "" {
		t.Errorf("none: CPUs %q, telemetry %q; want both empty", o.CPUs, o.TelemetryCPUs)
	}
}
