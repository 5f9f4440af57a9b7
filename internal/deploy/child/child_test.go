package child

import (
	"context"
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
