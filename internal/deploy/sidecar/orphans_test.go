package sidecar

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// startNginx runs nginx, master and worker, in its own directory under
// parent and its own process group, forked as a deployer's spawner does:
// from a thread that lives until the test ends, for the parent-death
// signal is the forking thread's. It returns the master's command and its
// worker's PID once both run and the pid file is written.
func startNginx(t *testing.T, parent string, deathsig syscall.Signal) (*exec.Cmd, int) {
	t.Helper()
	k, _ := Lookup("nginx")
	bin := binaryOrSkip(t, k)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Name: "t.nginx", Protocol: HTTP1, Dir: filepath.Join(parent, "t.nginx"), Threads: 1, Listeners: []Listener{
		{Name: "in_x", Port: port, Upstreams: []string{"127.0.0.1:1"}, Component: "x", Inbound: true},
	}}
	if err := os.Mkdir(c.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path, err := Write(k, c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, k.Args(path, c)...)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathsig}
	started, release := make(chan error, 1), make(chan struct{})
	go func() {
		goruntime.LockOSThread()
		started <- cmd.Start()
		<-release
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A master the test has reaped already leaves its group's id
		// free: another test's, maybe, by now.
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
		close(release)
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ws, _ := workers(cmd.Process.Pid)
		if pid, err := masterPID(c.Dir); err == nil && pid == cmd.Process.Pid && len(ws) == 1 {
			return cmd, ws[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx (pid %d) has no worker and pid file after 10 s", cmd.Process.Pid)
		}
	}
}

// alive reports whether pid runs: it exists and is no zombie (an orphan
// that init has not reaped).
func alive(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z" && st.State != "X"
}

func waitGone(t *testing.T, pid int, d time.Duration, what string) {
	t.Helper()
	for end := time.Now().Add(d); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s (pid %d) still runs after %s", what, pid, d)
		}
	}
}

// nginxParentEnv makes the test binary the parent of TestNginxParent's
// nginx: it names the directory to run nginx under.
const nginxParentEnv = "SVCLAB_TEST_NGINX_PARENT"

// TestNginxParent is no test: run by TestDeathSignalEndsWorkers as a
// process of its own, it starts nginx as a deployer does, prints the
// master's and the worker's PIDs, and waits to be killed.
func TestNginxParent(t *testing.T) {
	dir := os.Getenv(nginxParentEnv)
	if dir == "" {
		t.Skip("the parent process of TestDeathSignalEndsWorkers")
	}
	k, _ := Lookup("nginx")
	cmd, worker := startNginx(t, dir, DeathSignal(k))
	fmt.Printf("nginx %d %d\n", cmd.Process.Pid, worker)
	select {}
}

// TestDeathSignalEndsWorkers kills the parent of nginx started with
// DeathSignal, as kill -9 of svclab does: its worker goes with its master.
// The programs that do not fork get SIGKILL.
func TestDeathSignalEndsWorkers(t *testing.T) {
	for _, name := range []string{"envoy", "haproxy"} {
		k, _ := Lookup(name)
		if got := DeathSignal(k); got != syscall.SIGKILL {
			t.Errorf("%s: parent-death signal %v, want SIGKILL", name, got)
		}
	}
	k, _ := Lookup("nginx")
	binaryOrSkip(t, k)
	parent := exec.Command(os.Args[0], "-test.run=^TestNginxParent$", "-test.v")
	parent.Env = append(os.Environ(), nginxParentEnv+"="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	var master, worker int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "nginx %d %d", &master, &worker); n == 2 {
			break
		}
	}
	if worker == 0 {
		_ = parent.Process.Kill()
		t.Fatalf("the parent process started no nginx: %v", parent.Wait())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitGone(t, worker, 5*time.Second, "the worker of nginx whose parent was killed")
	waitGone(t, master, time.Second, "the master of nginx whose parent was killed")
}

// TestKillOrphans: a worker whose master was killed with -9 is killed by
// KillOrphans of the directory it runs under; a process that only sits in
// that directory (a shell, say) is not, nor is nginx under another one.
func TestKillOrphans(t *testing.T) {
	dead, other := t.TempDir(), t.TempDir()
	cmd, worker := startNginx(t, dead, syscall.SIGKILL)
	_, bystander := startNginx(t, other, syscall.SIGKILL)
	shell := exec.Command("sleep", "60")
	shell.Dir = filepath.Join(dead, "t.nginx")
	shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shell.Process.Kill(); _ = shell.Wait() })

	master := cmd.Process.Pid
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	if !alive(worker) {
		t.Fatalf("the worker died with its master: the test proves nothing")
	}
	got := KillOrphans(dead)
	want := []Orphan{{PGID: master, Dir: filepath.Join(dead, "t.nginx")}}
	if !slices.Equal(got, want) {
		t.Errorf("KillOrphans(%s) = %+v, want %+v", dead, got, want)
	}
	waitGone(t, worker, 2*time.Second, "the orphaned worker")
	if !alive(shell.Process.Pid) {
		t.Error("KillOrphans killed a process that only sat in the directory")
	}
	if !alive(bystander) {
		t.Error("KillOrphans killed nginx under another directory")
	}
	if got := KillOrphans(dead); len(got) != 0 {
		t.Errorf("a second KillOrphans killed %+v", got)
	}
}

// TestOneProcessKinds: the kinds that DeathSignal gives SIGKILL run as one
// process, threads and all, so that signal leaves nothing of them; nginx,
// which forks its worker, is the kind that Forks names.
func TestOneProcessKinds(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			k, _ := Lookup(name)
			bin := binaryOrSkip(t, k)
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			c := Config{Name: "t." + name, Protocol: HTTP1, Dir: t.TempDir(), Threads: 2, Listeners: []Listener{
				{Name: "out_0_x", Port: port, Upstreams: []string{"127.0.0.1:1"}, Component: "x"},
			}}
			path, err := Write(k, c)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, k.Args(path, c)...)
			cmd.Dir = c.Dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: DeathSignal(k)}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
					c.Close()
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s does not listen on %d after 20 s", name, port)
				}
			}
			// nginx's master listens before it forks its worker: give a
			// child a moment to show.
			var kids []int
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline) && len(kids) == 0; time.Sleep(20 * time.Millisecond) {
				if kids, err = workers(cmd.Process.Pid); err != nil {
					t.Fatal(err)
				}
			}
			if Forks(k) != (len(kids) > 0) {
				t.Errorf("%s runs with children %v, but Forks says %t", name, kids, Forks(k))
			}
		})
	}
}
