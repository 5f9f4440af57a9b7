package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"

	"github.com/svclab/svclab/internal/tempdir"
)

// Removed is an owner's parent group that Sweep removed.
type Removed struct {
	Path  string
	Owner tempdir.Owner
}

// Sweep removes the groups of svclab processes that are gone (killed with
// -9, say): every svclab/<pid>-<start>/ whose owner no longer runs, and
// the groups in it, after killing any process still inside (nothing svclab
// started may outlive it). A live owner's groups are never touched. Where
// cgroups are unavailable there is nothing to sweep and Sweep returns nil.
func Sweep() ([]Removed, error) {
	v, err := Detect()
	if err != nil {
		return nil, nil
	}
	parents := parentDirs(v)
	defer removeEmptyParents(v)
	seen := map[string]bool{}
	var out []Removed
	var errs []error
	for _, parent := range parents {
		entries, err := os.ReadDir(parent)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("sweep cgroups: %w", err))
			}
			continue
		}
		for _, e := range entries {
			o, ok := parseOwner(e.Name())
			if !ok || !e.IsDir() || o.Alive() {
				continue
			}
			dir := filepath.Join(parent, e.Name())
			if err := removeTree([]string{dir}); err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s (owner %s is dead): %w", dir, o, err))
				continue
			}
			if !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, Removed{Path: "/" + Parent + "/" + e.Name(), Owner: o})
			}
		}
	}
	return out, errors.Join(errs...)
}

// parentDirs are svclab's parent groups, one per hierarchy.
func parentDirs(v Version) []string {
	if v == V2 {
		return []string{filepath.Join(Root, Parent)}
	}
	var out []string
	for _, c := range controllers {
		out = append(out, filepath.Join(Root, string(c), Parent))
	}
	return out
}

// removeEmptyParents removes svclab's parent groups once no owner group is
// left in them, so that nothing of svclab stays in the hierarchy. An owner
// still present (another svclab running) keeps its parent: rmdir of a
// cgroup with subgroups fails, and that failure is the answer.
func removeEmptyParents(v Version) {
	for _, dir := range parentDirs(v) {
		_ = os.Remove(dir)
	}
}

// removeTree removes cgroup directories and the groups below them, deepest
// first. A cgroup directory holds only control files, which go with it,
// and subgroups; a process still in a group is killed, as rmdir fails
// while a group has members.
func removeTree(dirs []string) error {
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				errs = append(errs, removeTree([]string{filepath.Join(dir, e.Name())}))
			}
		}
		errs = append(errs, rmdir(dir))
	}
	return errors.Join(errs...)
}

// rmdir kills the group's members and removes it, waiting (up to 5 s) for
// the kernel to let go of members that are exiting.
func rmdir(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, pid := range members(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// members lists the PIDs in a group's cgroup.procs; none when unreadable.
func members(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// Enter moves the calling process into g and returns a function that moves
// it back to the groups it was in, so that g can be removed: for the load
// generator, which is svclab itself.
func (g *Group) Enter() (leave func() error, err error) {
	pid := os.Getpid()
	var back func() error
	if g.v1 != nil {
		was, err := cgroup1.Load(cgroup1.PidPath(pid), cgroup1.WithHierarchy(hierarchy))
		if err != nil {
			return nil, fmt.Errorf("find the cgroups of pid %d: %w", pid, err)
		}
		back = func() error { return was.Add(cgroup1.Process{Pid: pid}) }
	} else {
		path, err := cgroup2.PidGroupPath(pid)
		if err != nil {
			return nil, fmt.Errorf("find the cgroup of pid %d: %w", pid, err)
		}
		was, err := cgroup2.Load(path)
		if err != nil {
			return nil, fmt.Errorf("load cgroup %s: %w", path, err)
		}
		back = func() error { return was.AddProc(uint64(pid)) }
	}
	if err := g.Add(pid); err != nil {
		return nil, err
	}
	return func() error {
		if err := back(); err != nil {
			return fmt.Errorf("leave cgroup %s: %w", g.path, err)
		}
		return nil
	}, nil
}
