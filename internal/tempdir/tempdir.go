// Package tempdir keeps all of one process's temporary state under one
// directory, $TMPDIR/svclab-<pid>-<random>/, which records its owner, so
// that what a process killed with -9 leaves behind (sockets, HDR logs) can
// be told from what a live process is using, and removed by the next
// svclab to start.
//
// A directory's owner is written in a file inside it (OwnerFile): the PID
// and the process's start time, so a PID the kernel has since given to
// another process does not keep a dead owner's state alive.
package tempdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Prefix begins the name of every process directory in $TMPDIR.
const Prefix = "svclab-"

// OwnerFile is the name of the file that records a directory's owner.
const OwnerFile = ".svclab-owner"

// Owner identifies a process across PID reuse.
type Owner struct {
	PID int
	// Start is the process's start time in clock ticks since boot, as
	// /proc/PID/stat gives it; 0 where /proc cannot tell.
	Start uint64
}

func (o Owner) String() string { return fmt.Sprintf("pid %d", o.PID) }

// Self is the calling process.
func Self() Owner {
	pid := os.Getpid()
	start, _ := startTime(pid)
	return Owner{PID: pid, Start: start}
}

// Alive reports whether the process o names still runs: the PID exists,
// is not a zombie, and started when o says it did.
func (o Owner) Alive() bool {
	if o.PID <= 0 {
		return false
	}
	start, err := startTime(o.PID)
	switch {
	case err == nil:
		return o.Start == 0 || start == o.Start
	case errors.Is(err, errZombie), errors.Is(err, fs.ErrNotExist):
		return false
	}
	// No /proc to read: ask the kernel whether the PID exists.
	err = syscall.Kill(o.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

var errZombie = errors.New("zombie")

// startTime reads field 22 of /proc/PID/stat, the process's start time.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after its last ')' are plain.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, errZombie
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Claim records the calling process as dir's owner.
func Claim(dir string) error {
	o := Self()
	text := fmt.Sprintf("%d %d\n%s\n", o.PID, o.Start, strings.Join(os.Args, " "))
	if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(text), 0o644); err != nil {
		return fmt.Errorf("record the owner of %s: %w", dir, err)
	}
	return nil
}

// ReadOwner returns the owner recorded in dir. It fails with an error
// wrapping fs.ErrNotExist when dir records none.
func ReadOwner(dir string) (Owner, error) {
	b, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil {
		return Owner{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var o Owner
	if _, err := fmt.Sscanf(line, "%d %d", &o.PID, &o.Start); err != nil {
		return Owner{}, fmt.Errorf("%s: not an owner record: %w", filepath.Join(dir, OwnerFile), err)
	}
	return o, nil
}

// Orphaned reports whether dir belongs to no live process: its recorded
// owner is dead, or it records none and fallback (the PID its name
// carries, 0 for none) is dead too. A directory whose owner record is
// unreadable for another reason is left alone.
func Orphaned(dir string, fallback int) (bool, Owner) {
	o, err := ReadOwner(dir)
	if errors.Is(err, fs.ErrNotExist) {
		o = Owner{PID: fallback}
	} else if err != nil {
		return false, o
	}
	return !o.Alive(), o
}

var (
	mu   sync.Mutex
	root string
)

// Dir returns the calling process's directory, making it (and recording
// the owner) on first use, or again if something removed it.
func Dir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if root != "" {
		if _, err := os.Stat(filepath.Join(root, OwnerFile)); err == nil {
			return root, nil
		}
	}
	d, err := os.MkdirTemp("", Prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("temporary directory: %w", err)
	}
	if err := Claim(d); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	root = d
	return d, nil
}

// MkdirTemp makes a new directory inside the process's directory, named
// pattern with a random part, as os.MkdirTemp does.
func MkdirTemp(pattern string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	sub, err := os.MkdirTemp(d, pattern)
	if err != nil {
		return "", fmt.Errorf("temporary directory: %w", err)
	}
	return sub, nil
}

// RemoveOwn removes the calling process's directory and all in it, when
// it made one; for the end of a command.
func RemoveOwn() error {
	mu.Lock()
	defer mu.Unlock()
	if root == "" {
		return nil
	}
	err := os.RemoveAll(root)
	root = ""
	return err
}

// Removed is a directory Sweep or SweepPrefix removed.
type Removed struct {
	Path  string
	Owner Owner
	// Killed is the PID of a server that still ran in it (SweepPrefix's
	// kill); 0 for none.
	Killed int
}

// Sweep removes the process directories in parent ($TMPDIR when empty)
// whose owner is dead, and returns them. A directory a live process owns,
// the caller's own included, is never touched.
func Sweep(parent string) ([]Removed, error) { return SweepPrefix(parent, Prefix, nil) }

// SweepPrefix is Sweep for the directories named prefix<pid>-<random>
// (a backing server's, say): before removing one whose owner is dead it
// calls kill, when not nil, to end what still runs there; kill returns
// that process's PID, or 0.
func SweepPrefix(parent, prefix string, kill func(dir string) int) ([]Removed, error) {
	return sweep(parent, prefix, nil, kill)
}

// SweepOwner removes o's process directories in parent ($TMPDIR when
// empty) once o is dead: what a process killed with -9 left, found from a
// record of it that outlived it (the real node's owner, say), without
// touching other dead processes' directories as Sweep would. Nothing is
// removed while o lives.
func SweepOwner(parent string, o Owner) ([]Removed, error) {
	if o.PID <= 0 || o.Alive() {
		return nil, nil
	}
	return sweep(parent, Prefix, func(dirOwner Owner) bool {
		return dirOwner.PID == o.PID && (dirOwner.Start == o.Start || dirOwner.Start == 0 || o.Start == 0)
	}, nil)
}

// sweep removes the directories named prefix<pid>-<random> in parent
// whose owner is dead and, when whose is not nil, is one whose accepts.
func sweep(parent, prefix string, whose func(Owner) bool, kill func(dir string) int) ([]Removed, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", parent, err)
	}
	var out []Removed
	var errs []error
	for _, e := range entries {
		pid, ok := namePID(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		dead, o := Orphaned(dir, pid)
		if !dead || whose != nil && !whose(o) {
			continue
		}
		r := Removed{Path: dir, Owner: o}
		if kill != nil {
			r.Killed = kill(dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s (owner %s is dead): %w", dir, o, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// namePID reads the PID from a process directory's name,
// "<prefix><pid>-<random>".
func namePID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}
