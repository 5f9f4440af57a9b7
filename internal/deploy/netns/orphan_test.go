package netns_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// namespacesOf lists the namespaces a process owns.
func namespacesOf(t *testing.T, pid int) []string {
	t.Helper()
	m, err := filepath.Glob(fmt.Sprintf("/run/netns/svclab-%d-*", pid))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// startUp runs `svclab up` (this test binary, see TestMain) on a two-machine
// spec, and returns once the deployment is up.
func startUp(t *testing.T) *exec.Cmd {
	t.Helper()
	return startUpSpec(t, twoMachines("grpc", `latency = "1ms"`))
}

// startUpSpec runs `svclab up` on the spec body.
func startUpSpec(t *testing.T, body string) *exec.Cmd {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), upSpecEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ctrl-C") {
				ready <- nil
				for sc.Scan() {
				}
				return
			}
		}
		ready <- fmt.Errorf("svclab up ended before it was ready")
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("svclab up not ready in 30s")
	}
	return cmd
}

// hostPIDs lists the processes running in the namespaces ns, other than
// svclab itself: /proc/PID/ns/net is the main thread's namespace, and Go
// may have run a namespace-switching goroutine on svclab's main thread,
// which the runtime then parks there rather than ending it.
func hostPIDs(t *testing.T, ns []string, svclab int) []int {
	t.Helper()
	inode := map[string]bool{}
	for _, n := range ns {
		var st syscall.Stat_t
		if err := syscall.Stat(n, &st); err != nil {
			t.Fatal(err)
		}
		inode[fmt.Sprintf("net:[%d]", st.Ino)] = true
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	var pids []int
	for _, p := range procs {
		l, err := os.Readlink(p)
		if err == nil && inode[l] {
			var pid int
			fmt.Sscanf(p, "/proc/%d/", &pid)
			if pid != svclab {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// cmdline is what process pid runs now, its arguments joined by spaces,
// for a failure message ("" once it has gone).
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// cmdlines lists each of pids with what it runs now, for a failure
// message.
func cmdlines(pids []int) string {
	var out []string
	for _, pid := range pids {
		out = append(out, fmt.Sprintf("%d: %q", pid, cmdline(pid)))
	}
	return strings.Join(out, "; ")
}

func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("host process %d outlived its svclab", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestKill9 kills a real `svclab up` with -9: its hosts die with it, its
// namespaces stay until the next start's sweep (here deploy.Sweep, which
// `svclab clean` and every netns deployment run), which removes them all.
func TestKill9(t *testing.T) {
	needRoot(t)
	cmd := startUp(t)
	ns := namespacesOf(t, cmd.Process.Pid)
	if len(ns) != 4 { // router, client, two machines
		t.Fatalf("namespaces of svclab up: %v, want 4", ns)
	}
	pids := hostPIDs(t, ns, cmd.Process.Pid)
	if len(pids) != 2 {
		t.Fatalf("%d processes in the machines' namespaces, want 2: %s", len(pids), cmdlines(pids))
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitGone(t, pids)
	if left := namespacesOf(t, cmd.Process.Pid); len(left) != 4 {
		t.Fatalf("namespaces after kill -9: %v; want all 4 still there for the sweep", left)
	}
	removed, err := deploy.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if left := namespacesOf(t, cmd.Process.Pid); len(left) != 0 {
		t.Errorf("namespaces after the sweep: %v", left)
	}
	if len(removed) < 4 {
		t.Errorf("sweep reported %v, want the 4 namespaces", removed)
	}
	// A live svclab's namespaces are never swept.
	live := startUp(t)
	if _, err := deploy.Sweep(); err != nil {
		t.Fatal(err)
	}
	if n := len(namespacesOf(t, live.Process.Pid)); n != 4 {
		t.Errorf("the sweep removed a live svclab's namespaces: %d left of 4", n)
	}
	// Ctrl-C: the deployment stops and removes everything itself.
	_ = live.Process.Signal(syscall.SIGINT)
	if err := live.Wait(); err != nil {
		t.Errorf("svclab up after Ctrl-C: %v", err)
	}
	if left := namespacesOf(t, live.Process.Pid); len(left) != 0 {
		t.Errorf("namespaces after Ctrl-C: %v", left)
	}
}

// TestNotRoot deploys as an unprivileged user (nobody), which gets the
// error that says root is needed, and no namespace.
func TestNotRoot(t *testing.T) {
	needRoot(t) // to become nobody
	dir := t.TempDir()
	// The test's temp dir and its parent are root's alone.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "netns.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spec.toml")
	if err := os.WriteFile(path, []byte(twoMachines("grpc", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), deployEnv+"="+path, "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("deploy as nobody: %v, want the not-root error; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "needs root") {
		t.Errorf("error does not say root is needed:\n%s", out)
	}
	if left := namespacesOf(t, cmd.Process.Pid); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
}
