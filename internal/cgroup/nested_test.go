package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestNewChild: two children of a host group with one CPU and a memory
// budget run on the host's CPU, and a hog in one of them is ended by the
// host's budget, counted in the child's own OOM counter; removing the host
// removes its children.
func TestNewChild(t *testing.T) {
	m := open(t)
	cpus, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	one := List(cpus[len(cpus)-1:])
	host, err := m.New("host", Limits{CPUs: one, Memory: 48 << 20})
	if err != nil {
		t.Fatal(err)
	}
	spin, err := host.NewChild("spin", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	hog, err := host.NewChild("hog", Limits{Memory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := host.NewChild("spin", Limits{}); err == nil {
		t.Error("a second child named spin was made")
	}
	for _, c := range []*Group{spin, hog} {
		if l := c.Limits(); l.CPUs != one || l.Memory != 48<<20 {
			t.Errorf("child %s limits %+v, want the host's CPU %s and its 48 MiB (the tighter)", c.Name(), l, one)
		}
	}
	if got := spin.Name(); got != "host/spin" {
		t.Errorf("child name %q, want host/spin", got)
	}
	sp := child(t, "spin", spin)
	if got := allowedList(t, sp.Process.Pid); got != one {
		t.Errorf("a child of the host may run on %q, want the host's %q", got, one)
	}
	cmd := child(t, "hog", hog)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the memory hog was not killed within 30 s")
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the hog ended with %v, want SIGKILL from the OOM killer", werr)
	}
	if s, err := hog.Stats(); err != nil || s.OOMKills < 1 {
		t.Errorf("the hog's group counts %d OOM kills (%v), want at least 1", s.OOMKills, err)
	}
	if s, err := spin.Stats(); err != nil || s.OOMKills != 0 {
		t.Errorf("the spinner's group counts %d OOM kills (%v), want 0", s.OOMKills, err)
	}
	if err := host.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Group{host, spin, hog} {
		for _, d := range c.dirs() {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s remains after the host's group was removed: %v", d, err)
			}
		}
	}
	m.mu.Lock()
	left := len(m.groups)
	m.mu.Unlock()
	if left != 0 {
		t.Errorf("the manager still knows %d groups after the host's was removed", left)
	}
}
