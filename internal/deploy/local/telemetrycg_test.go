package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
)

// TestTelemetryOnOtherCPUs: with deploy.Options.TelemetryCPUs (the
// generator's CPUs under deploy.telemetry_cpus = "generator"), Jaeger and
// Prometheus run there, every thread of each, in a group of their own,
// while the hosts stay on the deployment's CPUs; the group goes with the
// deployment.
func TestTelemetryOnOtherCPUs(t *testing.T) {
	t.Parallel()
	m := needCgroups(t)
	if m.Version() != cgroup.V1 {
		t.Skip("the paths checked are cgroup v1's; this machine has v2")
	}
	if _, err := os.Stat(deploy.JaegerPath()); err != nil {
		t.Skipf("Jaeger %s is not built (make jaeger): %v", deploy.JaegerVersion, err)
	}
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus: %v", err)
	}
	cpus, err := cgroup.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs to tell the backends' from the hosts'")
	}
	sut, telemetry := strconv.Itoa(cpus[len(cpus)-1]), strconv.Itoa(cpus[0])
	topo := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntracing = 1.0\nmetrics = true\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := localDeployer(t).Deploy(ctx, topo, deploy.Options{CPUs: sut, TelemetryCPUs: telemetry})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())

	backends := backendsOf(t, d.ID())
	for _, name := range []string{"jaeger", "prometheus"} {
		pid, ok := backends[name]
		if !ok {
			t.Fatalf("no %s process of deployment %s (found %v)", name, d.ID(), backends)
		}
		threads, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range threads {
			tid, _ := strconv.Atoi(th.Name())
			if got := procCgroup(t, tid, "cpuset"); filepath.Base(got) != d.ID()+"-telemetry" {
				t.Errorf("%s thread %d: cpuset cgroup %s, want the deployment's telemetry group", name, tid, got)
			}
		}
		set := filepath.Join(cgroup.Root, "cpuset", procCgroup(t, pid, "cpuset"))
		if got := readTrim(t, filepath.Join(set, "cpuset.cpus")); got != telemetry {
			t.Errorf("%s: cpuset.cpus = %s, want %s", name, got, telemetry)
		}
	}
	for _, b := range d.Capabilities().Telemetry.TelemetryProcesses() {
		if b.Info.Limits == nil || b.Info.Limits.CPUs != telemetry {
			t.Errorf("%s: limits %+v, want cpus %s", b.Info, b.Info.Limits, telemetry)
		}
	}
	var dir string
	for _, p := range d.Processes() {
		info := p.Info()
		set := filepath.Join(cgroup.Root, "cpuset", procCgroup(t, info.PID, "cpuset"))
		if got := readTrim(t, filepath.Join(set, "cpuset.cpus")); got != sut {
			t.Errorf("%s: cpuset.cpus = %s, want the deployment's %s", info, got, sut)
		}
		dir = filepath.Join(cgroup.Root, "cpuset", filepath.Dir(procCgroup(t, info.PID, "cpuset")), d.ID()+"-telemetry")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("telemetry group %s: %v", dir, err)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s is still there after stop: %v", dir, err)
	}
}

// backendsOf finds the telemetry backends of deployment id among this
// process's children: their configuration lives in its directory, whose
// name begins with the id.
func backendsOf(t *testing.T, id string) map[string]int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		name := filepath.Base(args[0])
		if (name == "jaeger" || name == "prometheus") && strings.Contains(string(raw), "/"+id+"-") {
			out[name] = pid
		}
	}
	return out
}
