package child

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/procgroup/procgrouptest"
)

func TestStopGracefulAndKilled(t *testing.T) {
	for _, c := range []struct {
		name   string
		script string
		killed bool
	}{
		{"stops on the signal", "sleep 30", false},
		{"ignores it and is killed", "trap '' TERM; sleep 30 & wait", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, err := Start(exec.Command("sh", "-c", c.script))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // let the shell set its trap
			pid := ch.Process.Pid
			err = ch.Stop(context.Background(), syscall.SIGTERM, 300*time.Millisecond)
			if got := err != nil && strings.Contains(err.Error(), "killed"); got != c.killed {
				t.Fatalf("Stop: %v; killed %v, want %v", err, got, c.killed)
			}
			select {
			case <-ch.Done():
			default:
				t.Fatal("Done is open after Stop")
			}
			// The whole group is gone, the shell's sleep included (an
			// orphan is reaped by init a moment later).
			deadline := time.Now().Add(5 * time.Second)
			for syscall.Kill(-pid, 0) != syscall.ESRCH && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if err := syscall.Kill(-pid, 0); err != syscall.ESRCH {
				out, _ := exec.Command("ps", "-o", "pid,pgid,stat,cmd", "-g", strconv.Itoa(pid)).CombinedOutput()
				t.Errorf("process group %d still exists 5 s after Stop (%v):\n%s", pid, err, out)
			}
			if err := ch.Stop(context.Background(), syscall.SIGTERM, time.Second); err != nil {
				t.Errorf("second Stop: %v", err)
			}
		})
	}
}

func TestStartFailure(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/binary")); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
}

// TestStartIn: the child starts where enter moved the forking thread (a
// network namespace of its own here), leave runs once it has, and an
// enter that fails starts nothing.
func TestStartIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: unshares a network namespace")
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	left := false
	ch, err := StartIn(exec.Command("sleep", "30"), func() (func() error, error) {
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			return nil, err
		}
		return func() error { left = true; return nil }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Stop(context.Background(), syscall.SIGTERM, time.Second)
	got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", ch.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if got == self || !left {
		t.Errorf("child in namespace %s (svclab's %s), leave ran: %v; want another namespace, and leave run", got, self, left)
	}
	if now, _ := os.Readlink("/proc/self/ns/net"); now != self {
		t.Errorf("the test's own thread moved to %s", now)
	}
	if _, err := StartIn(exec.Command("sleep", "30"), func() (func() error, error) { return nil, errors.New("no way in") }); err == nil || err.Error() != "no way in" {
		t.Errorf("StartIn with a failing enter: %v, want its error", err)
	}
}

// TestStopAfterReuse reproduces the hazard of a group kill sent after
// the child's reap: the child exits, is reaped, and a new process is
// given its PID, leading a group of the same id (as happens minutes later
// under make test's forks once the PIDs wrap). Stop must leave it alone.
func TestStopAfterReuse(t *testing.T) {
	ch, err := Start(exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	<-ch.Done()
	pid := ch.Process.Pid
	done := procgrouptest.Stranger(t, pid)
	if err := ch.Stop(context.Background(), syscall.SIGTERM, time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := ch.SignalGroup(syscall.SIGKILL); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SignalGroup after the reap: %v, want os.ErrProcessDone", err)
	}
	select {
	case err := <-done:
		t.Errorf("the process given the child's PID %d ended (%v) on a kill meant for the child's group", pid, err)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestLeftovers: what a child leaves running in its group ends when it
// exits, before Stop and whether Stop comes or not; with KeepLeftovers it
// stays, unless Stop was called before the child's exit.
func TestLeftovers(t *testing.T) {
	for _, c := range []struct {
		name   string
		keep   bool
		script string
		stop   bool // Stop while the child runs
		stays  bool
	}{
		{"ended with the child", false, "exit 0", false, false},
		{"kept", true, "exit 0", false, true},
		{"kept, but Stop came first", true, "trap 'exit 0' TERM; wait", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if c.keep {
				opts = append(opts, KeepLeftovers())
			}
			cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null & echo $!; "+c.script)
			// A pipe of the test's own: cmd.Wait, which may come first,
			// closes an exec.Cmd's StdoutPipe.
			out, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd.Stdout = w
			ch, err := Start(cmd, opts...)
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Stop(context.Background(), syscall.SIGKILL, time.Second)
			var bg int
			if _, err := fmt.Fscan(out, &bg); err != nil {
				t.Fatalf("the child printed no PID: %v", err)
			}
			start := startTime(bg) // "" when it has already ended
			if start == "" && c.stays {
				t.Fatalf("the child's background process %d is gone at once", bg)
			}
			alive := func() bool { return start != "" && startTime(bg) == start }
			defer func() {
				if alive() {
					_ = syscall.Kill(bg, syscall.SIGKILL) // alive: its PID is its own
				}
			}()
			if c.stop {
				time.Sleep(50 * time.Millisecond) // let the shell set its trap
				if err := ch.Stop(context.Background(), syscall.SIGTERM, 5*time.Second); err != nil {
					t.Errorf("Stop: %v", err)
				}
			}
			<-ch.Done()
			if err := ch.Err(); err != nil {
				t.Errorf("Err: %v, want the shell's exit status 0", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for !c.stays && alive() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !c.stays {
				if alive() {
					t.Errorf("the child's background process %d outlived it", bg)
				}
				return
			}
			if err := ch.Stop(context.Background(), syscall.SIGTERM, time.Second); err != nil {
				t.Errorf("Stop after the exit: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
			if !alive() {
				t.Errorf("the child's background process %d died with it, KeepLeftovers notwithstanding", bg)
			}
		})
	}
}

// startTime is process pid's start time, "" once it is gone or a zombie.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}
