package sidecar

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"

	"github.com/svclab/svclab/internal/procgroup"
)

// DeathSignal is the parent-death signal a deployer gives k's program:
// the signal it gets when svclab dies without stopping it (kill -9).
//
// nginx's workers outlive their master: they do not watch it, and a
// SIGKILL of the master leaves them running, reparented to init. SIGTERM
// is nginx's fast shutdown instead: the master passes it on to its
// workers, SIGKILLs those still there after 1.5 s, and exits once they
// are gone. Every other program is one process (Envoy, HAProxy with
// -db), which SIGKILL ends at once.
func DeathSignal(k Kind) syscall.Signal {
	if Forks(k) {
		return syscall.SIGTERM
	}
	return syscall.SIGKILL
}

// Orphan is an nginx process group KillOrphans ended.
type Orphan struct {
	// PGID is the group's ID, the PID its master had.
	PGID int
	// Dir is the directory nginx ran in.
	Dir string
}

// KillOrphans ends the nginx processes still running in dir, the temp
// directory of a svclab that is dead, and returns their groups. It is the
// fallback of DeathSignal, for a master that could not act on it (killed
// with -9 itself, by the OOM killer say): the next svclab to start calls it
// before it removes a dead owner's directory.
//
// nginx rewrites its processes' command lines and environments, so what
// identifies one of svclab's is where it runs: every nginx svclab starts
// (a sidecar, a node proxy, the ingress) runs in its own directory,
// holding the pid file in which the master wrote its PID, and every
// process of it is in the master's process group (the deployer makes the
// master a group leader). A process counts only when both agree, so
// neither a recycled PID nor a shell left in that directory is killed; and
// the kernel gives no new process the ID of a group that still has
// members, so the group is killed through one of them, checked again and
// held as it is (procgroup.KillChecked).
func KillOrphans(dir string) []Orphan {
	procs, _ := procfs.AllProcs()
	type group struct {
		dir     string
		members []int
	}
	groups := map[int]*group{}
	for _, p := range procs {
		cwd, master, ok := orphanOf(p, dir)
		if !ok {
			continue
		}
		g := groups[master]
		if g == nil {
			g = &group{dir: cwd}
			groups[master] = g
		}
		g.members = append(g.members, p.PID)
	}
	var out []Orphan
	for pgid, g := range groups {
		// A member is still one of this group's when /proc says so again.
		still := func(pid int) bool {
			p, err := procfs.NewProc(pid)
			if err != nil {
				return false
			}
			_, master, ok := orphanOf(p, dir)
			return ok && master == pgid
		}
		for _, pid := range g.members {
			if procgroup.KillChecked(pid, pgid, still) {
				out = append(out, Orphan{PGID: pgid, Dir: g.dir})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Orphan) int { return a.PGID - b.PGID })
	return out
}

// orphanOf reports whether p is an nginx process of a proxy directory
// under dir, with that directory and its master's PID: p runs there, and
// is in the process group of the master the pid file there names.
func orphanOf(p procfs.Proc, dir string) (cwd string, master int, ok bool) {
	cwd, err := p.Cwd()
	if err != nil || !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
		return "", 0, false
	}
	if master, err = masterPID(cwd); err != nil {
		return "", 0, false
	}
	st, err := p.Stat()
	if err != nil || st.PGRP != master {
		return "", 0, false
	}
	return cwd, master, true
}

// nginxPIDFile is where, in its proxy's directory, nginx's master writes
// its PID: for a reload (Update) and to know its processes again
// (KillOrphans).
const nginxPIDFile = "nginx.pid"

// masterPID reads the PID nginx's master wrote to the pid file in dir.
func masterPID(dir string) (int, error) {
	path := filepath.Join(dir, nginxPIDFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("the master's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("the master's pid file %s holds %q", path, b)
	}
	return pid, nil
}
