package tempdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// deadProcess starts a process, waits for its end and returns it as an
// Owner: a PID that existed and no longer does (until the kernel reuses it).
func deadProcess(t *testing.T) Owner {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, _ := startTime(pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return Owner{PID: pid, Start: start}
}

// liveProcess starts a process that lives until the test ends.
func liveProcess(t *testing.T) Owner {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	start, err := startTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return Owner{PID: cmd.Process.Pid, Start: start}
}

func TestAlive(t *testing.T) {
	live, dead := liveProcess(t), deadProcess(t)
	tests := []struct {
		name string
		o    Owner
		want bool
	}{
		{"self", Self(), true},
		{"live", live, true},
		{"live, start time unknown", Owner{PID: live.PID}, true},
		{"dead", dead, false},
		// The PID is live, but it is not the process that was recorded.
		{"PID reused", Owner{PID: live.PID, Start: live.Start + 1}, false},
		{"no PID", Owner{}, false},
	}
	for _, tt := range tests {
		if got := tt.o.Alive(); got != tt.want {
			t.Errorf("%s: %+v.Alive() = %v, want %v", tt.name, tt.o, got, tt.want)
		}
	}
}

func TestSweep(t *testing.T) {
	parent := t.TempDir()
	live, dead := liveProcess(t), deadProcess(t)
	mk := func(name string, owner *Owner) string {
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "sub", "x.sock"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if owner != nil {
			rec := fmt.Sprintf("%d %d\nsvclab up x.toml\n", owner.PID, owner.Start)
			if err := os.WriteFile(filepath.Join(d, OwnerFile), []byte(rec), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	self := Self()
	reused := Owner{PID: live.PID, Start: live.Start + 1}
	keep := []string{
		mk(Prefix+strconv.Itoa(self.PID)+"-1", &self),
		mk(Prefix+strconv.Itoa(live.PID)+"-2", &live),
		// No owner record, but the PID in its name lives: a directory
		// just made, whose owner is about to be written.
		mk(Prefix+strconv.Itoa(live.PID)+"-3", nil),
		// Not a process directory.
		mk(Prefix+"load-4", nil),
		mk("other-"+strconv.Itoa(dead.PID)+"-5", &dead),
	}
	gone := []string{
		mk(Prefix+strconv.Itoa(dead.PID)+"-6", &dead),
		mk(Prefix+strconv.Itoa(live.PID)+"-7", &reused),
		mk(Prefix+strconv.Itoa(dead.PID)+"-8", nil),
	}
	// An unreadable owner record is left alone: it may be a process of
	// another kind that svclab does not understand.
	garbled := mk(Prefix+strconv.Itoa(dead.PID)+"-9", nil)
	os.WriteFile(filepath.Join(garbled, OwnerFile), []byte("not a record"), 0o644)
	keep = append(keep, garbled)

	removed, err := Sweep(parent)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range removed {
		paths = append(paths, r.Path)
	}
	slices.Sort(paths)
	slices.Sort(gone)
	if !slices.Equal(paths, gone) {
		t.Errorf("removed %q\nwant %q", paths, gone)
	}
	for _, d := range keep {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v; it should be kept", d, err)
		}
	}
	for _, d := range gone {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still exists (%v)", d, err)
		}
	}
}

func TestDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	defer RemoveOwn()
	sub, err := MkdirTemp("load-")
	if err != nil {
		t.Fatal(err)
	}
	root, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(sub) != root || filepath.Dir(root) != os.TempDir() {
		t.Fatalf("%s is not in %s, in $TMPDIR %s", sub, root, os.TempDir())
	}
	if pid, ok := namePID(filepath.Base(root), Prefix); !ok || pid != os.Getpid() {
		t.Errorf("%s does not carry the PID %d", root, os.Getpid())
	}
	if o, err := ReadOwner(root); err != nil || o != Self() {
		t.Errorf("owner %+v, %v; want %+v", o, err, Self())
	}
	// A sweep by anyone leaves a live process's directory alone.
	if removed, err := Sweep(""); err != nil || len(removed) != 0 {
		t.Errorf("Sweep removed %v, %v", removed, err)
	}
	// Removed under it, the directory is made again on next use.
	os.RemoveAll(root)
	again, err := MkdirTemp("x-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOwner(filepath.Dir(again)); err != nil {
		t.Errorf("remade directory: %v", err)
	}
	if err := RemoveOwn(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(again)); !os.IsNotExist(err) {
		t.Errorf("RemoveOwn left %s", filepath.Dir(again))
	}
}

// TestSweepOwner removes one dead process's directories, those its owner
// record names, and no other dead process's; nothing while it lives.
func TestSweepOwner(t *testing.T) {
	parent := t.TempDir()
	live, other := liveProcess(t), deadProcess(t)
	// A start time of its own: deadProcess reads none (0) when the
	// process ends first, and a record without one names any process of
	// that PID.
	dead := deadProcess(t)
	dead.Start = 1000
	mk := func(name string, owner Owner) string {
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(d, "kubetest-1", "etcd"), 0o755); err != nil {
			t.Fatal(err)
		}
		rec := fmt.Sprintf("%d %d\n", owner.PID, owner.Start)
		if err := os.WriteFile(filepath.Join(d, OwnerFile), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	its := mk(Prefix+strconv.Itoa(dead.PID)+"-1", dead)
	others := mk(Prefix+strconv.Itoa(other.PID)+"-2", other)
	// The PID reused by a process started later: not the one recorded.
	reused := mk(Prefix+strconv.Itoa(dead.PID)+"-3", Owner{PID: dead.PID, Start: dead.Start + 1})
	lives := mk(Prefix+strconv.Itoa(live.PID)+"-4", live)

	if removed, err := SweepOwner(parent, live); err != nil || len(removed) != 0 {
		t.Errorf("SweepOwner(a live owner) = %v, %v; want nothing removed", removed, err)
	}
	removed, err := SweepOwner(parent, dead)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Path != its {
		t.Errorf("removed %+v, want only %s", removed, its)
	}
	if _, err := os.Stat(its); !os.IsNotExist(err) {
		t.Errorf("%s still exists (%v)", its, err)
	}
	for _, d := range []string{others, reused, lives} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v; it should be kept", d, err)
		}
	}
}
