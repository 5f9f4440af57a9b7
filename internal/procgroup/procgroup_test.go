package procgroup

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/procgroup/procgrouptest"
)

// proc is a process the test watches: its PID and its start time, so
// that a later process given the same PID is not taken for it.
type proc struct {
	pid   int
	start string
}

func watch(t *testing.T, pid int) proc {
	t.Helper()
	st, ok := stat(pid)
	if !ok {
		t.Fatalf("process %d is not there", pid)
	}
	return proc{pid, st[19]}
}

// stat is /proc/PID/stat's fields after the command name (state first).
func stat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

// alive reports whether p runs (a zombie is dead).
func (p proc) alive() bool {
	st, ok := stat(p.pid)
	return ok && st[19] == p.start && st[0] != "Z"
}

// gone waits up to 5 s for p to die (an orphan's SIGKILL takes effect as
// it is scheduled), and reports whether it did.
func (p proc) gone() bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !p.alive() {
			return true
		}
	}
	return false
}

// kill ends p, a leftover a test meant to keep; p's PID is its own while
// it runs, which alive has just seen.
func (p proc) kill() {
	if p.alive() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// startShell starts script in sh as a group leader and returns its
// Leader with the PID of the background process the script prints
// first.
func startShell(t *testing.T, script string) (*exec.Cmd, *Leader, proc) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l := New(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = l.Signal(syscall.SIGKILL)
		_ = l.Wait()
		t.Fatalf("the script printed no PID: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, l, watch(t, pid)
}

// TestLeader: the group is signalled before the reap, and what is left of
// it ends with the leader when asked, as each caller's Stop needs.
func TestLeader(t *testing.T) {
	for _, c := range []struct {
		name   string
		script string
		// act runs once the script has printed its background PID.
		act func(*exec.Cmd, *Leader) error
		// status is Wait's error's text ("" for none); leftover whether
		// the background process survives the leader.
		status   string
		leftover bool
	}{
		{"Signal reaches the whole group", `sleep 60 >/dev/null & echo $!; wait`,
			func(_ *exec.Cmd, l *Leader) error { return l.Signal(syscall.SIGKILL) }, "signal: killed", false},
		{"EndGroup ends what an exited leader left", `sleep 60 >/dev/null & echo $!; exit 0`,
			func(_ *exec.Cmd, l *Leader) error {
				if !l.EndGroup() {
					return errors.New("EndGroup: too late")
				}
				return nil
			}, "", false},
		{"without EndGroup what it left stays", `sleep 60 >/dev/null & echo $!; exit 3`,
			nil, "exit status 3", true},
		{"EndGroup, then the leader alone stops", `sleep 60 >/dev/null & echo $!; trap 'exit 0' TERM; wait`,
			func(cmd *exec.Cmd, l *Leader) error {
				l.EndGroup()
				time.Sleep(50 * time.Millisecond) // let the shell set its trap
				return cmd.Process.Signal(syscall.SIGTERM)
			}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, l, bg := startShell(t, c.script)
			defer bg.kill()
			if c.act != nil {
				if err := c.act(cmd, l); err != nil {
					t.Fatal(err)
				}
			}
			err := l.Wait()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.status {
				t.Errorf("Wait: %q, want %q", got, c.status)
			}
			if c.leftover {
				time.Sleep(100 * time.Millisecond)
				if !bg.alive() {
					t.Errorf("the leader's background process %d died with it", bg.pid)
				}
			} else if !bg.gone() {
				t.Errorf("the leader's background process %d outlived it", bg.pid)
			}
			if err := l.Signal(syscall.SIGKILL); !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("Signal after the reap: %v, want os.ErrProcessDone", err)
			}
			if l.EndGroup() {
				t.Error("EndGroup after the reap reported it would act")
			}
		})
	}
}

// TestSignalToZombie: between the leader's exit and its reap the zombie
// holds the group's id, and a Signal then still reaches what it left.
func TestSignalToZombie(t *testing.T) {
	var l *Leader
	var sigErr error
	exited = func() { sigErr = l.Signal(syscall.SIGKILL) }
	defer func() { exited = nil }()
	var bg proc
	_, l, bg = startShell(t, `sleep 60 >/dev/null & echo $!; exit 0`)
	defer bg.kill()
	if err := l.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if sigErr != nil {
		t.Errorf("Signal to the zombie leader's group: %v", sigErr)
	}
	if !bg.gone() {
		t.Errorf("the background process %d outlived the signal to its group", bg.pid)
	}
}

// TestNothingSentAfterReap: once the leader is reaped no signal goes out,
// whoever has its number by then; Signal and Wait race freely (run with
// -race).
func TestNothingSentAfterReap(t *testing.T) {
	var mu sync.Mutex
	var sent []int
	kill = func(pid int, sig syscall.Signal) error {
		mu.Lock()
		sent = append(sent, pid)
		mu.Unlock()
		return syscall.Kill(pid, sig)
	}
	defer func() { kill = syscall.Kill }()
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l := New(cmd)
	if err := l.Signal(syscall.SIGKILL); err == nil {
		t.Error("Signal before Start succeeded")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = l.Signal(0)
				}
			}
		})
	}
	_ = l.Wait()
	mu.Lock()
	before := len(sent)
	mu.Unlock()
	for range 10 {
		if err := l.Signal(syscall.SIGKILL); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("Signal after the reap: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != before {
		t.Errorf("%d signals sent after the reap", len(sent)-before)
	}
}

// TestReusedPID reproduces the hazard without waiting for the PIDs to
// wrap: after the leader's reap a new process is given its PID and leads
// a group of the same id. Signal must not reach it; the raw kill(-pid)
// that Signal replaces does.
func TestReusedPID(t *testing.T) {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l := New(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l.EndGroup()
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	done := procgrouptest.Stranger(t, pid)
	if err := l.Signal(syscall.SIGKILL); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Signal after the reap: %v, want os.ErrProcessDone", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the process that took PID %d ended (%v) on a signal meant for its predecessor's group", pid, err)
	case <-time.After(200 * time.Millisecond):
	}
	// What the old code did: the stranger's group has the reaped
	// leader's number, and a kill of it ends the stranger.
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill(-%d): %v", pid, err)
	}
	select {
	case err := <-done:
		if err == nil || err.Error() != "signal: killed" {
			t.Errorf("the stranger ended with %v, want signal: killed", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("kill(-pid) did not reach the group that reused the number: the test reproduces nothing")
	}
}
