package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary a child that does one thing: "spin" burns
// CPU on every core, "hog" allocates memory without end, "own" makes a
// group, joins it, reports it and sleeps.
const childEnv = "SVCLAB_CGROUP_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "spin":
		for range runtime.NumCPU() {
			go func() {
				for {
				}
			}()
		}
		time.Sleep(time.Minute)
	case "hog":
		var keep [][]byte
		for range 4096 { // 4 GiB at most: bounded
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println(len(keep))
	case "detect":
		_, err := Detect()
		fmt.Println(err)
	case "own":
		m, err := Open()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		g, err := m.New("stale", Limits{CPU: 1})
		if err == nil {
			err = Join(g.ProcsFiles())
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(g.Path())
		time.Sleep(time.Minute)
	}
	os.Exit(0)
}

// open returns a manager, or skips the test where cgroups are unavailable.
func open(t *testing.T) *Manager {
	t.Helper()
	m, err := Open()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("needs writable cgroups (root, v1 with cpu, cpuacct, cpuset and memory, or v2): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		for _, d := range ownerDirs(m.version, m.owner) {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("%s remains after Close", d)
			}
		}
	})
	return m
}

// child starts the test binary in mode, inside g when g is not nil
// (joined by the parent: the child is blocked on its stdin until then).
func child(t testing.TB, mode string, g *Group) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if g != nil {
		if err := g.Add(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	return cmd
}

// TestCPUQuota is the acceptance figure of a CPU limit: a child spinning
// on every core, limited to 0.5 core, uses 0.50 ± 0.05 core, measured by
// the group's own CPU accounting over wall time.
func TestCPUQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for 4 s")
	}
	m := open(t)
	g, err := m.New("quota", Limits{CPU: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	boost(t, m, g)
	child(t, "spin", g)
	time.Sleep(500 * time.Millisecond) // past start-up
	s0, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(4 * time.Second)
	s1, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	cores := (s1.CPUSeconds - s0.CPUSeconds) / time.Since(t0).Seconds()
	t.Logf("limit 0.5 core: used %.3f cores; %d of %d periods throttled, %.2f s throttled",
		cores, s1.ThrottledPeriods-s0.ThrottledPeriods, s1.Periods-s0.Periods, s1.ThrottledSeconds-s0.ThrottledSeconds)
	if cores < 0.45 || cores > 0.55 {
		t.Errorf("used %.3f cores under a 0.5-core quota, want 0.50 ± 0.05", cores)
	}
	if s1.ThrottledPeriods <= s0.ThrottledPeriods || s1.ThrottledSeconds <= s0.ThrottledSeconds {
		t.Errorf("a saturated group was never throttled: %+v → %+v", s0, s1)
	}
}

// boost gives g and its parents the largest CPU weight, so that other work
// on a shared machine is not what holds g below its quota: a group weighs
// as one task against the tasks beside it, whatever it holds.
func boost(t testing.TB, m *Manager, g *Group) {
	t.Helper()
	file, value, base := "cpu.shares", "262144", filepath.Join(Root, "cpu")
	if m.Version() == V2 {
		file, value, base = "cpu.weight", "10000", Root
	}
	for p := g.Path(); p != "/"; p = filepath.Dir(p) {
		f := filepath.Join(base, p, file)
		if p == "/"+Parent { // shared with every svclab: put it back
			if was, err := os.ReadFile(f); err == nil {
				t.Cleanup(func() { _ = os.WriteFile(f, was, 0) })
			}
		}
		if err := os.WriteFile(f, []byte(value), 0); err != nil {
			t.Logf("raise the CPU weight of %s: %v (contention may pull the figure down)", p, err)
		}
	}
}

// TestMemoryLimitOOM: a child that allocates without end under a 32 MiB
// limit is killed by the OOM killer, and the group counts the kill.
func TestMemoryLimitOOM(t *testing.T) {
	m := open(t)
	g, err := m.New("hog", Limits{Memory: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	cmd := child(t, "hog", g)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the memory hog was not killed within 30 s")
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the hog ended with %v, want SIGKILL from the OOM killer", werr)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.OOMKills < 1 {
		t.Errorf("OOMKills = %d after an OOM kill", s.OOMKills)
	}
}

// TestCPUSet: a group's CPU list is what its process may run on, and the
// split gives the generator and the system disjoint sets.
func TestCPUSet(t *testing.T) {
	m := open(t)
	cpus, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	gen, sut, err := Split(cpus)
	if err != nil {
		t.Skip(err)
	}
	want := map[string]string{"gen": List(gen), "sut": List(sut)}
	for name, list := range want {
		g, err := m.New(name, Limits{CPUs: list})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Remove()
		cmd := child(t, "spin", g)
		if got := allowedList(t, cmd.Process.Pid); got != list {
			t.Errorf("group %s: the child may run on %q, want %q", name, got, list)
		}
	}
	if want["gen"] == want["sut"] {
		t.Errorf("split %v into the same sets", cpus)
	}
}

func allowedList(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
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

// TestSweepAfterKill9: a process that made a group and is killed with -9
// leaves the group behind; Sweep removes it, and leaves a live owner's
// groups alone.
func TestSweepAfterKill9(t *testing.T) {
	m := open(t)
	mine, err := m.New("mine", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Remove()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=own")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child: %q, %v", line, err)
	}
	path := strings.TrimSpace(line)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	dirs := []string{filepath.Join(Root, path)}
	if m.Version() == V1 {
		dirs = dirs[:0]
		for _, c := range controllers {
			dirs = append(dirs, filepath.Join(Root, string(c), path))
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			// Every svclab command sweeps at start; one running beside
			// this test (make test runs the CLI's) got there first.
			t.Skipf("the killed child's group %s was swept before this test's sweep, by another svclab", d)
		} else if err != nil {
			t.Fatalf("the killed child's group %s: %v", d, err)
		}
	}
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	owner := strings.Split(path, "/")[2]
	found := false
	for _, r := range removed {
		if strings.HasSuffix(r.Path, owner) {
			found = r.Owner.PID == cmd.Process.Pid
		}
	}
	if !found {
		t.Errorf("Sweep removed %+v, want the owner %s (pid %d)", removed, owner, cmd.Process.Pid)
	}
	for _, d := range append(dirs, filepath.Dir(dirs[0])) {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains after the sweep: %v", d, err)
		}
	}
	for _, d := range mine.dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("the sweep touched a live owner's group %s: %v", d, err)
		}
	}
}

// TestParentsGoWithTheLastOwner checks that nothing of svclab stays in the
// hierarchy once no owner group is left: the shared parents go too.
func TestParentsGoWithTheLastOwner(t *testing.T) {
	m := open(t)
	if _, err := m.New("parent-check", Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range parentDirs(m.Version()) {
		entries, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		others := 0
		for _, e := range entries {
			if _, ok := parseOwner(e.Name()); ok && e.IsDir() {
				others++
			}
		}
		if others == 0 {
			t.Errorf("%s remains with no owner group in it", d)
		}
	}
}

func TestList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{1}, "1"},
		{[]int{0, 1}, "0-1"},
		{[]int{0, 1, 2, 3, 6}, "0-3,6"},
		{[]int{0, 2, 4, 5}, "0,2,4-5"},
	} {
		if got := List(c.in); got != c.want {
			t.Errorf("List(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in       []int
		gen, sut string
	}{
		{[]int{0, 1}, "0", "1"},
		{[]int{0, 1, 2, 3}, "0", "1-3"},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, "0-1", "2-7"},
		{[]int{2, 3, 5}, "2", "3,5"},
	} {
		gen, sut, err := Split(c.in)
		if err != nil || List(gen) != c.gen || List(sut) != c.sut {
			t.Errorf("Split(%v) = %v, %v, %v; want %s | %s", c.in, gen, sut, err, c.gen, c.sut)
		}
	}
	if _, _, err := Split([]int{0}); err == nil {
		t.Error("Split of one CPU: no error")
	}
}

func TestNewRejects(t *testing.T) {
	m := &Manager{version: V1, owner: "1-1", groups: map[string]*Group{}}
	for _, c := range []struct {
		name string
		l    Limits
	}{
		{"", Limits{}}, {"a/b", Limits{}}, {"..", Limits{}}, {"x", Limits{CPU: -1}}, {"x", Limits{Memory: -1}},
	} {
		if _, err := m.New(c.name, c.l); err == nil {
			t.Errorf("New(%q, %+v): no error", c.name, c.l)
		}
	}
}

// TestDetectUnprivileged: where svclab may not create groups (here: not
// root), Detect fails with ErrUnavailable and says what is missing.
func TestDetectUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		v, err := Detect()
		if !errors.Is(err, ErrUnavailable) {
			t.Skipf("not root, yet cgroups are writable (%s, a delegated subtree?)", v)
		}
		return
	}
	if _, err := Detect(); err != nil {
		t.Skipf("cgroups unavailable even to root: %v", err)
	}
	// A copy of the test binary that user nobody can run.
	dir, err := os.MkdirTemp("", "svclab-cgroup-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cgroup.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=detect")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("cannot run as nobody: %v: %s", err, out)
	}
	msg := strings.TrimSpace(string(out))
	if !strings.HasPrefix(msg, ErrUnavailable.Error()+": ") || !strings.Contains(msg, "svclab needs root") {
		t.Errorf("Detect as nobody: %q, want %q naming what is missing", msg, ErrUnavailable)
	}
}

// TestParentRemovedMeanwhile: another svclab that finds the shared parent
// group empty removes it (its Detect probe, its sweep), possibly just as
// this one makes its first group there; the group is made all the same.
func TestParentRemovedMeanwhile(t *testing.T) {
	m := open(t)
	version := m.Version()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, d := range parentDirs(version) {
				_ = os.Remove(d) // only while empty, as the others do
			}
			// Hundreds of times a second: far more often than
			// svclabs start.
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() { close(stop); <-done }()
	for i := range 100 {
		m, err := Open()
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.New("race", Limits{CPUs: "0"})
		if cerr := m.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			t.Fatalf("group %d, its parent removed meanwhile: %v", i, err)
		}
	}
}

// TestNiceShares: a thread at nice 19 makes groups of about the kernel's
// weight of nice 19 (15 of nice 0's 1024), one at nice 0 leaves the
// default, and a group made at nice 19 has those shares.
func TestNiceShares(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("lowering a thread's nice again needs root")
	}
	runtime.LockOSThread() // setpriority of PRIO_PROCESS 0 is the thread's
	defer runtime.UnlockOSThread()
	was := Nice()
	defer syscall.Setpriority(syscall.PRIO_PROCESS, 0, was)
	for _, tc := range []struct {
		nice     int
		min, max uint64
	}{
		{0, 0, 0}, {1, 800, 840}, {10, 100, 120}, {19, 12, 18},
	} {
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, tc.nice); err != nil {
			t.Fatal(err)
		}
		if got := NiceShares(); got < tc.min || got > tc.max {
			t.Errorf("nice %d: shares %d, want %d to %d", tc.nice, got, tc.min, tc.max)
		}
	}
	m := open(t)
	g, err := m.New("niced", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	if m.Version() != V1 {
		return
	}
	b, err := os.ReadFile(filepath.Join(Root, "cpu", g.Path(), "cpu.shares"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a group made at nice 19: cpu.shares %s", strings.TrimSpace(string(b)))
	if got, want := strings.TrimSpace(string(b)), strconv.FormatUint(NiceShares(), 10); got != want {
		t.Errorf("group made at nice 19: cpu.shares %s, want %s", got, want)
	}
}

// TestLongName: a group named past a file name's 255 bytes (a 1,000
// service monolith's, after its components) is made, under a shortened
// directory that two such names do not share.
func TestLongName(t *testing.T) {
	m := open(t)
	long := strings.Repeat("s123+", 1000)
	a, err := m.New(long+"a", Limits{CPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Remove()
	b, err := m.New(long+"b", Limits{CPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove()
	if a.Path() == b.Path() || len(filepath.Base(a.Path())) > 255 {
		t.Errorf("paths %s and %s", a.Path(), b.Path())
	}
	dir := filepath.Join(Root, a.Path())
	if m.Version() == V1 {
		dir = filepath.Join(Root, "cpu", a.Path())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Error(err)
	}
}
