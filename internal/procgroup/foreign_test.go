package procgroup

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestKillChecked: a sweep's kill reaches only what ours vouches for,
// and the group only through a member of it.
func TestKillChecked(t *testing.T) {
	for _, c := range []struct {
		name string
		// script prints its background process's PID; exits says the
		// shell exits then, leaving it (a master killed, its worker left).
		script string
		exits  bool
		// target is whom KillChecked is given: the shell or its
		// background process; group whether with the shell's group.
		target string
		group  bool
		ours   bool
		// killed is KillChecked's answer; shellDies and bgDies what
		// becomes of the two.
		killed, shellDies, bgDies bool
	}{
		{"not ours: nothing is sent", `sleep 60 >/dev/null & echo $!; wait`, false, "shell", true, false, false, false, false},
		{"ours, alone", `sleep 60 >/dev/null & echo $!; wait`, false, "shell", false, true, true, true, false},
		{"ours, with its group", `sleep 60 >/dev/null & echo $!; wait`, false, "shell", true, true, true, true, true},
		{"a member of a group whose leader is gone", `sleep 60 >/dev/null & echo $!; exit 0`, true, "bg", true, true, true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, l, bg := startShell(t, c.script)
			defer bg.kill()
			waited := make(chan error, 1)
			if c.exits {
				waited <- l.Wait() // reaped: only its leftover holds the group's id
			} else {
				go func() { waited <- l.Wait() }()
				defer func() { _ = l.Signal(syscall.SIGKILL) }()
			}
			pgid := cmd.Process.Pid
			target := pgid
			if c.target == "bg" {
				target = bg.pid
			}
			if !c.group {
				pgid = 0
			}
			asked := 0
			got := KillChecked(target, pgid, func(pid int) bool {
				asked = pid
				return c.ours
			})
			if got != c.killed {
				t.Errorf("KillChecked: %v, want %v", got, c.killed)
			}
			if asked != target {
				t.Errorf("ours was asked about %d, want %d", asked, target)
			}
			if !c.exits {
				select {
				case err := <-waited:
					if !c.shellDies {
						t.Errorf("the shell ended (%v)", err)
					} else if err == nil || err.Error() != "signal: killed" {
						t.Errorf("the shell ended with %v, want signal: killed", err)
					}
				case <-time.After(500 * time.Millisecond):
					if c.shellDies {
						t.Error("the shell is still running")
					}
				}
			}
			if c.bgDies && !bg.gone() {
				t.Errorf("the background process %d is still running", bg.pid)
			}
			if !c.bgDies && !bg.alive() {
				t.Errorf("the background process %d died", bg.pid)
			}
		})
	}
}

// TestSignalChecked: the signal reaches the process ours vouches for,
// and nothing else.
func TestSignalChecked(t *testing.T) {
	for _, c := range []struct {
		name    string
		ours    bool
		err     error
		stopped bool
	}{
		{"ours", true, nil, true},
		{"not ours", false, ErrNotOurs, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() { _ = cmd.Process.Kill(); <-done }()
			err := SignalChecked(cmd.Process.Pid, syscall.SIGTERM, func(int) bool { return c.ours })
			if !errors.Is(err, c.err) {
				t.Errorf("SignalChecked: %v, want %v", err, c.err)
			}
			select {
			case err := <-done:
				done <- err
				if !c.stopped {
					t.Errorf("the process ended (%v)", err)
				}
			case <-time.After(500 * time.Millisecond):
				if c.stopped {
					t.Error("the process did not get the signal")
				}
			}
		})
	}
}

// TestKillCheckedReportsAGroupsLeader: a leader killed with its group is
// reported killed even when its parent reaps it before the pidfd's own
// SIGKILL, which then fails (program's TestSweep once missed the shell it
// killed so, under make test's load). The group's kill here returns only
// once the shell is reaped, which makes that order certain.
func TestKillCheckedReportsAGroupsLeader(t *testing.T) {
	cmd, l, bg := startShell(t, `sleep 60 >/dev/null & echo $!; wait`)
	defer bg.kill()
	waited := make(chan error, 1)
	go func() { waited <- l.Wait() }()
	var reaped error
	kill = func(pid int, sig syscall.Signal) error {
		err := syscall.Kill(pid, sig)
		if pid == -cmd.Process.Pid {
			reaped = <-waited
		}
		return err
	}
	defer func() { kill = syscall.Kill }()
	if !KillChecked(cmd.Process.Pid, cmd.Process.Pid, func(int) bool { return true }) {
		t.Errorf("KillChecked reported the shell %d not killed", cmd.Process.Pid)
	}
	if reaped == nil || reaped.Error() != "signal: killed" {
		t.Errorf("the shell ended with %v, want signal: killed", reaped)
	}
	if !bg.gone() {
		t.Errorf("the background process %d is still running", bg.pid)
	}
}
