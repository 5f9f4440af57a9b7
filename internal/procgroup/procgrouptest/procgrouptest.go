// Package procgrouptest lets a test reproduce a PID's reuse at once,
// instead of waiting for the PIDs to wrap around: StartAs starts a
// process with a PID that was given before, so that a group kill meant
// for an earlier process of that PID, sent after its reap, would reach
// it.
package procgrouptest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// lastPID is where Linux keeps the PID it gave last in this PID
// namespace; the next fork gets the first free one above it. Only root
// (CAP_SYS_ADMIN, or CAP_CHECKPOINT_RESTORE) may write it.
const lastPID = "/proc/sys/kernel/ns_last_pid"

// ErrUnsupported is StartAs's error where this process may not choose
// PIDs.
var ErrUnsupported = errors.New("procgrouptest: cannot choose a PID here (needs root to write " + lastPID + ")")

// StartAs starts newCmd() as process pid, which must be free, the
// leader of a process group of its own (so of id pid): it sets the last
// PID given to pid-1 just before the fork, and tries again (up to tries
// times) when another fork, of this machine or of the Go runtime, took
// pid first. The caller stops and reaps what it returns.
func StartAs(pid, tries int, newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	f, err := os.OpenFile(lastPID, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	defer f.Close()
	// Fork from this thread only: a new thread takes a PID too.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range tries {
		cmd := newCmd()
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
		if _, err := f.WriteAt([]byte(strconv.Itoa(pid-1)), 0); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if cmd.Process.Pid == pid {
			return cmd, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	return nil, fmt.Errorf("procgrouptest: PID %d not won in %d tries (taken, or the machine forks too much)", pid, tries)
}

// Stranger starts `sleep 60` as process pid (StartAs), a stranger that
// took the number of a process the test has reaped, and returns the
// channel its exit arrives on. The test is skipped where PIDs cannot be
// chosen; the stranger is killed and reaped when the test ends.
func Stranger(t testing.TB, pid int) <-chan error {
	t.Helper()
	cmd, err := StartAs(pid, 50, func() *exec.Cmd { return exec.Command("sleep", "60") })
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); done <- err; exited <- err }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return done
}
