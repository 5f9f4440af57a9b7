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
