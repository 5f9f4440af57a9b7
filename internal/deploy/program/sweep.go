package program

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/procgroup"
	"github.com/svclab/svclab/internal/tempdir"
)

// OwnerEnv marks every program svclab starts with the svclab process that
// started it ("PID:START", tempdir.Owner), so that the next svclab to
// start finds a program whose svclab was killed with -9 and which ignored
// its parent-death signal, and what it forked that kept its environment.
const OwnerEnv = "SVCLAB_PROGRAM_OWNER"

// ownerMark is this process's mark.
func ownerMark() string {
	o := tempdir.Self()
	return fmt.Sprintf("%d:%d", o.PID, o.Start)
}

// Sweep kills the programs (and their process groups) that a dead svclab
// started, and says which. Deploy calls it first; `svclab clean` too
// (the local deployer's Traits.Sweep).
func Sweep() ([]string, error) {
	paths, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var removed []string
	for _, path := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil || pid == self {
			continue
		}
		owner, ok := deadOwner(pid)
		if !ok {
			continue
		}
		// Its group, when it leads one (each program does), takes what it
		// forked that cleared its environment (nginx's workers); the
		// owner is read again as it is killed (procgroup.KillChecked).
		if procgroup.KillChecked(pid, pid, func(pid int) bool { o, ok := deadOwner(pid); return ok && o == owner }) {
			removed = append(removed, fmt.Sprintf("program pid %d (started by svclab %s, which is gone)", pid, owner))
		}
	}
	return removed, nil
}

// deadOwner is the svclab that started process pid, when its environment
// has the mark and that svclab is gone.
func deadOwner(pid int) (tempdir.Owner, bool) {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return tempdir.Owner{}, false // gone, or not ours to read
	}
	owner, ok := ownerOf(env)
	if !ok || owner.Alive() {
		return tempdir.Owner{}, false
	}
	return owner, true
}

// ownerOf reads OwnerEnv from a /proc/PID/environ.
func ownerOf(env []byte) (tempdir.Owner, bool) {
	for _, kv := range bytes.Split(env, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte(OwnerEnv+"="))
		if !ok {
			continue
		}
		pid, start, ok := strings.Cut(string(v), ":")
		if !ok {
			return tempdir.Owner{}, false
		}
		p, err1 := strconv.Atoi(pid)
		s, err2 := strconv.ParseUint(start, 10, 64)
		if err1 != nil || err2 != nil {
			return tempdir.Owner{}, false
		}
		return tempdir.Owner{PID: p, Start: s}, true
	}
	return tempdir.Owner{}, false
}
