package procgroup

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotOurs is SignalChecked's error for a process ours disowns.
var ErrNotOurs = errors.New("procgroup: not the process sought (its PID is another's now)")

// SignalChecked sends sig to process pid, which svclab knows by a PID it
// read (from a pid file), if ours says it is the process sought; ours
// reads /proc/pid. Through a pidfd, sig reaches the process ours saw or
// none (an error when that process has ended since), never a process
// given its PID later.
func SignalChecked(pid int, sig syscall.Signal, ours func(pid int) bool) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if !ours(pid) {
		return ErrNotOurs
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

// KillChecked SIGKILLs process pid, which svclab did not start (a dead
// svclab's, that a sweep found), if ours says it is the process sought
// (ours reads /proc/pid: its command line, its working directory), and
// with it the process group pgid while pid is still a member of it (pgid
// 0: pid alone). It reports whether it killed pid.
//
// No zombie of svclab's holds such a process's numbers, so they are held
// otherwise: a pidfd names the process itself, whichever process has its
// PID later; ours is believed because that process is still there after
// ours read /proc/pid (the signal through the pidfd succeeds), so that
// /proc/pid was it; and before the group's kill it is stopped (SIGSTOP),
// so that it cannot exit in between and leave the group's id free for
// another group.
func KillChecked(pid, pgid int, ours func(pid int) bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false // gone already
	}
	defer unix.Close(fd)
	if !ours(pid) {
		return false
	}
	inGroup := false
	if pgid != 0 {
		if unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0) != nil {
			return false // it ended after ours read /proc/pid
		}
		if g, err := unix.Getpgid(pid); err == nil && g == pgid {
			inGroup = kill(-pgid, syscall.SIGKILL) == nil
		}
	}
	// Killed with its group, pid may be reaped already (by its parent, or
	// init), and the pidfd's signal then fails: it was killed all the same.
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil || inGroup
}
