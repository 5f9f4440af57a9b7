// Package procgroup signals the process group that a child of svclab
// leads (started with SysProcAttr.Setpgid, so the group's id is the
// child's PID), and reaps that child.
//
// The rule: a group is signalled only while its leader is not yet reaped.
// A live or zombie leader holds its PID, and so the group's id, which the
// kernel then gives no other process; once the leader is reaped and no
// member of its group is left, the number is free, and with pid_max at
// 32768 and thousands of forks a minute (make test) another process group
// has it within minutes, so that a kill(-pid) sent after the reap may end
// a stranger (as it likely did another test's Jaeger, killed 0.2 s after
// it started, with no OOM kill). Leader.Wait therefore
// waits for the leader's exit without reaping it (waitid with WNOWAIT),
// ends what is left of its group while the zombie still holds the id,
// when asked to, and reaps it only then; Leader.Signal does nothing once
// the reap has begun.
//
// A process svclab did not start (a dead svclab's, that a sweep finds)
// has no zombie of svclab's to hold its numbers: KillChecked holds it
// otherwise.
package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Leader is a child of this process that leads its own process group.
// Only its Wait may reap the child: nothing else may call cmd.Wait or
// cmd.Process.Wait.
type Leader struct {
	cmd *exec.Cmd

	mu sync.Mutex
	// reaped is set just before Wait reaps the leader: from then on the
	// group's id may become anyone's.
	reaped bool
	// end makes Wait SIGKILL what is left of the group when the leader
	// exits, before the reap.
	end bool
}

// New returns the Leader of cmd, which is or will be started with
// SysProcAttr.Setpgid set. It may be made before cmd.Start, so that
// cmd.Cancel can signal through it.
func New(cmd *exec.Cmd) *Leader { return &Leader{cmd: cmd} }

// EndGroup makes Wait SIGKILL whatever is left of the group once the
// leader exits, before it reaps it, so that nothing the leader started
// in its group outlives it. It reports false when that is too late: Wait
// has begun to reap the leader, and what is left (if anything) is out of
// reach.
func (l *Leader) EndGroup() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.end = true
	return !l.reaped
}

// errNotStarted is Signal's error for a command not started.
var errNotStarted = errors.New("procgroup: not started")

// Signal sends sig to the group while its leader is not yet reaped (it
// may have exited: its zombie still holds the group's id). Once Wait has
// begun to reap it, Signal sends nothing and returns os.ErrProcessDone,
// as os.Process.Signal does, so that it may serve as an exec.Cmd's
// Cancel.
func (l *Leader) Signal(sig syscall.Signal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reaped {
		return os.ErrProcessDone
	}
	if l.cmd.Process == nil {
		return errNotStarted
	}
	return kill(-l.cmd.Process.Pid, sig)
}

// kill is syscall.Kill; a test sees through it what is sent.
var kill = syscall.Kill

// exited, when set (by a test), runs once the leader has exited and
// before Wait ends the group and reaps it.
var exited func()

// Wait waits for the leader to exit, SIGKILLs what is left of its group
// when EndGroup was called by then, and reaps the leader with cmd.Wait,
// whose error it returns ("exit status 1", "signal: killed"). Call it
// once, after cmd.Start.
func (l *Leader) Wait() error {
	pid := l.cmd.Process.Pid
	var err error
	for {
		var info unix.Siginfo
		// WNOWAIT leaves the child waitable: a zombie until cmd.Wait.
		err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	if exited != nil {
		exited()
	}
	l.mu.Lock()
	// Without the zombie (waitid failed: someone else reaped the child,
	// against New's contract) the group's id is no longer known to be
	// the child's, and nothing is sent.
	if err == nil && l.end {
		_ = kill(-pid, syscall.SIGKILL)
	}
	l.reaped = true
	l.mu.Unlock()
	return l.cmd.Wait()
}
