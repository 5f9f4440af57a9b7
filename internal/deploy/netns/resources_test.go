package netns_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/deploy/netns"
)

// needCgroups skips a test that needs writable cgroups, and removes the
// test binary's own parent group when it ends, as a svclab command does.
func needCgroups(t *testing.T) {
	t.Helper()
	needRoot(t)
	if _, err := cgroup.Open(); errors.Is(err, cgroup.ErrUnavailable) {
		t.Skipf("needs writable cgroups: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cgroup.RemoveOwn(); err != nil {
			t.Error(err)
		}
	})
}

// machinesWith is the chain over two machines, hop1 on vm1 and hop2 on vm2,
// with the given lines added to each machine's table.
func machinesWith(vm1, vm2 string) string {
	return fmt.Sprintf(`[app]
name = "chain"
hops = 2
[deploy]
deployer = "netns"
placement = "split"
[deploy.hosts.vm1]
groups = ["hop1"]
%s
[deploy.hosts.vm2]
groups = ["hop2"]
%s
`, vm1, vm2)
}

func deployWith(t *testing.T, body string, env ...string) deploy.Deployment {
	t.Helper()
	d, topo, err := deploy.Resolve(load(t, body))
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dep, err := d.Deploy(ctx, topo, deploy.Options{Env: env})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	return dep
}

// cgroupDir is pid's group in the v1 controller's hierarchy (or v2's).
func cgroupDir(t *testing.T, pid int, controller string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && (f[1] == controller || (f[0] == "0" && f[1] == "")) {
			if f[1] == "" {
				return filepath.Join(cgroup.Root, f[2])
			}
			return filepath.Join(cgroup.Root, controller, f[2])
		}
	}
	t.Fatalf("pid %d has no %s cgroup:\n%s", pid, controller, b)
	return ""
}

func allowedCPUs(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Cpus_allowed_list for pid %d", pid)
	return ""
}

// TestMachineCPUs: two machines with cpus = 1 each get one core each, disjoint;
// each machine's process runs only there; a CPU-bound component (four
// spinning goroutines on vm2) uses at most one core, read from its own
// group's accounting and from the samples the runner takes; and the
// machines' groups go with the deployment.
func TestMachineCPUs(t *testing.T) {
	needCgroups(t)
	cpus, err := cgroup.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs for two machines of one core")
	}
	dep := deployWith(t, machinesWith("cpus = 1", "cpus = 1\nexclusive = true"), hostentry.SpinEnv+"=hop2")
	nd := dep.(*netns.Deployment)
	lims := nd.MachineLimits()
	if len(lims) != 2 {
		t.Fatalf("machine limits %v, want two machines", lims)
	}
	sets := map[string]string{}
	for i, l := range lims {
		if c, err := cgroup.ParseList(l.CPUs); err != nil || len(c) != 1 {
			t.Errorf("machine %d has CPU set %q, want one core", i, l.CPUs)
		}
		sets[nd.Machines()[i]] = l.CPUs
	}
	if sets["vm1"] == sets["vm2"] {
		t.Errorf("both machines run on CPU %s; want disjoint cores", sets["vm1"])
	}
	var desc bytes.Buffer
	deploy.Describe(&desc, dep)
	for _, h := range nd.Machines() {
		if want := "groups " + map[string]string{"vm1": "hop1", "vm2": "hop2"}[h] + ", CPU " + sets[h]; !strings.Contains(desc.String(), want) {
			t.Errorf("svclab up's listing lacks %q:\n%s", want, desc.String())
		}
	}
	var dirs []string
	var spinner deploy.Process
	for _, p := range dep.Processes() {
		info := p.Info()
		machine := nd.MachineOf(groupIndex(t, dep, info.Group))
		if got := allowedCPUs(t, info.PID); got != sets[machine] {
			t.Errorf("%s on %s may run on CPU %q, want its machine's %q", info, machine, got, sets[machine])
		}
		if info.Limits == nil || info.Limits.CPUs != sets[machine] {
			t.Errorf("%s reports limits %+v, want its machine's CPU set %s", info, info.Limits, sets[machine])
		}
		dir := cgroupDir(t, info.PID, "cpuset")
		// The process's group is inside its machine's.
		dirs = append(dirs, dir, filepath.Dir(dir))
		if info.Group == "hop2" {
			spinner = p
		}
	}
	if spinner == nil {
		t.Fatal("no process of hop2")
	}
	time.Sleep(300 * time.Millisecond) // past the spinner's start
	ctx := context.Background()
	// Wall time spans both samples, so a test descheduled between a
	// sample and its clock reading can only make the figure smaller.
	t0 := time.Now()
	u0, err := spinner.Resources().Sample(ctx)
	if err != nil || u0.Cgroup == nil {
		t.Fatalf("sample of %s: %+v, %v; want its cgroup's counters", spinner.Info(), u0, err)
	}
	time.Sleep(2 * time.Second)
	u1, err := spinner.Resources().Sample(ctx)
	if err != nil || u1.Cgroup == nil {
		t.Fatalf("sample of %s: %+v, %v", spinner.Info(), u1, err)
	}
	wall := time.Since(t0).Seconds()
	cores := (u1.Cgroup.CPUSeconds - u0.Cgroup.CPUSeconds) / wall
	procCores := (u1.CPUSeconds - u0.CPUSeconds) / wall
	t.Logf("a CPU-bound hop2 on a one-core machine: %.3f cores by its cgroup, %.3f by /proc", cores, procCores)
	// 1 core, with 5% for the sampling's own timing.
	if cores > 1.05 || procCores > 1.05 {
		t.Errorf("hop2 used %.3f cores (cgroup) / %.3f (proc) on a machine of one core", cores, procCores)
	}
	if cores <= 0.05 {
		t.Errorf("hop2 used %.3f cores: the spinner did not run", cores)
	}
	if err := dep.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s remains after Stop: %v", d, err)
		}
	}
}

func groupIndex(t *testing.T, dep deploy.Deployment, group string) int {
	t.Helper()
	for i, g := range dep.Topology().Groups {
		if g.Name == group {
			return i
		}
	}
	t.Fatalf("no group %s", group)
	return -1
}

// TestMachineMemory: a machine's memory budget holds its processes together,
// and one that outgrows it is ended by the OOM killer, its exit saying so
// (the run's failure reason), while the other machine runs on.
func TestMachineMemory(t *testing.T) {
	needCgroups(t)
	dep := deployWith(t, machinesWith("", `memory = "64MiB"`), hostentry.HogEnv+"=hop2")
	defer dep.Stop(context.Background())
	if l := dep.(*netns.Deployment).MachineLimits(); l[0].Memory != 0 || l[1].Memory != 64<<20 {
		t.Errorf("machine limits %+v, want vm1 unlimited and vm2 64 MiB", l)
	}
	select {
	case p := <-dep.Exited():
		<-p.Done()
		e := p.Exit()
		if p.Info().Group != "hop2" || !e.OutOfMemory || !strings.Contains(e.Status, "OOM killer at its memory limit of 64MiB") {
			t.Errorf("exit of %s: %q (out of memory %v), want hop2 ended by the OOM killer at 64MiB", p.Info(), e.Status, e.OutOfMemory)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the memory hog on vm2 was not ended within 60 s")
	}
	for _, p := range dep.Processes() {
		if p.Info().Group == "hop1" && syscall.Kill(p.Info().PID, 0) != nil {
			t.Errorf("hop1 on vm1 died with vm2's hog")
		}
	}
}

// TestKill9LeavesNoMachineCgroups: a svclab up killed with -9 leaves its
// machines' groups; the sweep every svclab runs at start removes them.
func TestKill9LeavesNoMachineCgroups(t *testing.T) {
	needCgroups(t)
	cmd := startUpSpec(t, machinesWith("cpus = 1", `memory = "256MiB"`))
	pattern := filepath.Join(cgroup.Root, "memory", cgroup.Parent, strconv.Itoa(cmd.Process.Pid)+"-*", "netns*-vm2")
	if m, _ := cgroup.Open(); m != nil && m.Version() == cgroup.V2 {
		pattern = filepath.Join(cgroup.Root, cgroup.Parent, strconv.Itoa(cmd.Process.Pid)+"-*", "netns*-vm2")
	}
	groups, _ := filepath.Glob(pattern)
	if len(groups) != 1 {
		t.Fatalf("machine vm2's group: %v, want one match of %s", groups, pattern)
	}
	if b, err := os.ReadFile(filepath.Join(groups[0], "memory.limit_in_bytes")); err == nil && strings.TrimSpace(string(b)) != strconv.Itoa(256<<20) {
		t.Errorf("vm2's memory limit is %s, want 256 MiB", b)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if _, err := cgroup.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(groups[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s remains after the sweep: %v", filepath.Dir(groups[0]), err)
	}
	if _, err := deploy.Sweep(); err != nil {
		t.Fatal(err)
	}
}
