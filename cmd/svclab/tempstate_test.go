package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/tempdir"
)

// shortTempDir is a $TMPDIR for a child svclab: short, as unix socket
// paths under it must fit in 108 bytes.
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "st")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// processDirs lists the process directories in tmp, by owner PID.
func processDirs(t *testing.T, tmp string) map[int]string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(tmp, tempdir.Prefix+"*"))
	out := map[int]string{}
	for _, d := range m {
		o, err := tempdir.ReadOwner(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		out[o.PID] = d
	}
	return out
}

// waitFor polls cond every 20 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// TestKilledUpLeavesNoTempState kills `svclab up` with -9 while its unix
// sockets exist, then checks that its directory outlives it (nothing can
// remove it) and that the next svclab to start removes it, and only it.
func TestKilledUpLeavesNoTempState(t *testing.T) {
	t.Parallel()
	tmp := shortTempDir(t)
	spec := writeFile(t, "chain.toml", "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\nnetwork = \"unix\"\n")
	mark := marker(t)
	cmd := exec.Command(svclabBin, "up", spec)
	cmd.Env = append(os.Environ(), mark, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ctrl-C") {
				ready <- true
				break
			}
		}
		close(ready)
		io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("svclab up ended before it was ready")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("svclab up was not ready within 30 s")
	}
	dirs := processDirs(t, tmp)
	own, ok := dirs[cmd.Process.Pid]
	if !ok || len(dirs) != 1 {
		t.Fatalf("process directories %v; want one, of pid %d", dirs, cmd.Process.Pid)
	}
	socks, _ := filepath.Glob(filepath.Join(own, "*", "*.sock"))
	if len(socks) == 0 {
		t.Fatalf("no unix sockets under %s", own)
	}
	// A live process's directory: a sweep leaves it alone.
	if _, _, code := svclab(t, context.Background(), []string{"TMPDIR=" + tmp}, "clean"); code != 0 {
		t.Fatalf("clean exit %d", code)
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("clean removed a live svclab's directory: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoProcesses(t, mark, 5*time.Second)
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("the killed up's directory is gone before any sweep (%v): the test proves nothing", err)
	}
	stdout, stderr, code := svclab(t, context.Background(), []string{"TMPDIR=" + tmp}, "clean")
	want := "removed " + own + " (its svclab, pid " + strconv.Itoa(cmd.Process.Pid) + ", is gone)"
	t.Logf("clean after kill: %s", stdout)
	if code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("clean: exit %d\n%s%s\nwant %q", code, stdout, stderr, want)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("left in $TMPDIR: %v", left)
	}
	// cgroups and namespaces are the machine's, not $TMPDIR's: a second
	// clean may sweep what a parallel test's killed svclab left, so it is
	// checked for this svclab's leftovers only.
	stdout, _, _ = svclab(t, context.Background(), []string{"TMPDIR=" + tmp}, "clean")
	if strings.Contains(stdout, tmp) || strings.Contains(stdout, "pid "+strconv.Itoa(cmd.Process.Pid)+",") {
		t.Errorf("a second clean found more of the killed up: %s", stdout)
	}
}

const tempSpec = `
[app]
name = "chain"
hops = 2
[deploy]
network = "unix"
[load]
rate = 50
warmup = "200ms"
duration = "20s"
[experiment]
name = "tmp"
order = "sequential"
seed = 1
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
`

// runInFlight is a `svclab run` of tempSpec caught during its first run.
type runInFlight struct {
	tmp, spec, results, mark string
	cmd                      *exec.Cmd
	stderr                   *strings.Builder
	inFlight                 string // the run's directory, runs/.tmp-ID
}

// startRun starts `svclab run` of tempSpec, with its own $TMPDIR and extra
// flags, and waits until its first run is measuring: its run directory in
// flight, its deployment's and load generator's temp state in place.
func startRun(t *testing.T, extra ...string) *runInFlight {
	t.Helper()
	dir := t.TempDir()
	r := &runInFlight{tmp: shortTempDir(t), spec: filepath.Join(dir, "tmp.toml"), results: filepath.Join(dir, "results"),
		mark: marker(t), stderr: new(strings.Builder)}
	if err := os.WriteFile(r.spec, []byte(tempSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--no-report", "--results", r.results}, extra...)
	r.cmd = exec.Command(svclabBin, append(args, r.spec)...)
	r.cmd.Env = append(os.Environ(), r.mark, "TMPDIR="+r.tmp)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
	waitFor(t, 60*time.Second, "a run in flight with its temp state", func() bool {
		m, _ := filepath.Glob(filepath.Join(r.results, "tmp-*", "runs", ".tmp-*"))
		load, _ := filepath.Glob(filepath.Join(r.tmp, tempdir.Prefix+"*", "load-*", "latency.hlog"))
		socks, _ := filepath.Glob(filepath.Join(r.tmp, tempdir.Prefix+"*", "*", "*.sock"))
		if len(m) == 1 && len(load) == 1 && len(socks) > 0 {
			r.inFlight = m[0]
			return true
		}
		return false
	})
	return r
}

// TestKilledRunLeavesNoTempState kills `svclab run` with -9 during a run:
// the next svclab command to start (any: here plan) removes the process's
// temp state, and clean removes the run that was in flight.
func TestKilledRunLeavesNoTempState(t *testing.T) {
	t.Parallel()
	r := startRun(t)
	tmp, cmd, inFlight := r.tmp, r.cmd, r.inFlight
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoProcesses(t, r.mark, 5*time.Second)
	own, ok := processDirs(t, tmp)[cmd.Process.Pid]
	if !ok {
		t.Fatalf("the killed run's directory is gone before any sweep: the test proves nothing")
	}

	t.Logf("killed run left %s and %s", own, inFlight)
	if _, stderr, code := svclab(t, context.Background(), []string{"TMPDIR=" + tmp}, "plan", r.spec); code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(own); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s survived the next start of svclab (%v)", own, err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("left in $TMPDIR: %v", left)
	}

	stdout, stderr, code := svclab(t, context.Background(), []string{"TMPDIR=" + tmp}, "clean", r.results)
	if code != 0 || !strings.Contains(stdout, "removed "+inFlight+" (a run in flight when its svclab died)") {
		t.Fatalf("clean %s: exit %d\n%s%s", r.results, code, stdout, stderr)
	}
	if _, err := os.Stat(inFlight); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s survived clean (%v)", inFlight, err)
	}
}

// TestInterruptedRunResumeLine stops `svclab run` with Ctrl-C (SIGINT): the
// command it prints to continue carries the --set flags the run was
// started with, quoted for the shell, and its temp state is gone.
func TestInterruptedRunResumeLine(t *testing.T) {
	t.Parallel()
	r := startRun(t, "--set", "load.rate=40", "--set", `load.request.headers={X-A = "a b"}`)
	tmp, cmd, stderr, inFlight, spec, mark := r.tmp, r.cmd, r.stderr, r.inFlight, r.spec, r.mark
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	waitNoProcesses(t, mark, 5*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("svclab run after SIGINT: %v\n%s", err, stderr)
	}
	exp := filepath.Dir(filepath.Dir(inFlight))
	want := "continue with: svclab run --resume " + exp + ` --set load.rate=40 --set 'load.request.headers={X-A = "a b"}' ` + spec
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant %q", stderr, want)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("an interrupted run left %v in $TMPDIR", left)
	}
}

// TestRunStorageFull fills the results' file system during a run: the
// run that cannot be written counts as failed, and svclab says so.
func TestRunStorageFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	if err := os.Mkdir(results, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", results).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", results).Run() })
	spec := filepath.Join(dir, "tmp.toml")
	src := strings.Replace(tempSpec, `duration = "20s"`, `duration = "1s"`, 1)
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	mark := marker(t)
	cmd := exec.Command(svclabBin, "run", "--no-report", "--results", results, spec)
	cmd.Env = append(os.Environ(), mark, "TMPDIR="+shortTempDir(t))
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, 30*time.Second, "a run in flight", func() bool {
		m, _ := filepath.Glob(filepath.Join(results, "tmp-*", "runs", ".tmp-*"))
		return len(m) == 1
	})
	// Fill the file system: the run's results no longer fit.
	f, err := os.Create(filepath.Join(results, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 64<<10)
	for i := 0; i < 64; i++ {
		if _, err := f.Write(block); err != nil {
			break
		}
	}
	f.Close()
	err = cmd.Wait()
	waitNoProcesses(t, mark, 5*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("svclab run on a full disk: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "2 runs: 0 ok, 1 failed") || !strings.Contains(stderr.String(), "no space left on device") {
		t.Errorf("stderr:\n%s\nwant the run counted as failed, and why", stderr)
	}
}
