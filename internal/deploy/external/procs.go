package external

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/runtime"
)

// watchEvery is how often a named process is looked for in /proc: it is
// not svclab's child, so no wait tells of its exit.
const watchEvery = 200 * time.Millisecond

// process is a process of the system that deploy.external.processes
// names: sampled through procstat, watched through /proc.
type process struct {
	info  deploy.ProcessInfo
	src   *procstat.Source
	start uint64 // its start time in clock ticks, which a reused PID does not share
	done  chan struct{}
	once  sync.Once
	exit  *deploy.ExitError
}

func (p *process) Info() deploy.ProcessInfo               { return p.info }
func (p *process) Listeners() map[string]runtime.Endpoint { return nil }
func (p *process) Resources() deploy.ResourceSource       { return p.src }
func (p *process) Tail() []string                         { return nil }
func (p *process) Done() <-chan struct{}                  { return p.done }
func (p *process) Exit() *deploy.ExitError                { return p.exit }
func (p *process) ended(status string) {
	p.once.Do(func() {
		p.exit = &deploy.ExitError{Process: p.info, Status: status}
		close(p.done)
	})
}

// errNoMatch is findProcesses' error for a pattern no process matches.
var errNoMatch = errors.New("no process's command line holds")

// processWait bounds how long findWithin waits for a pattern's process:
// a setup that starts its server in the background (`server &`) can
// return before the server's exec, and until then the process's command
// line is the shell's. Seen on a busy machine: `sleep 2.96 &` not yet
// matched when its setup had returned.
const processWait = 3 * time.Second

// findWithin is findProcesses, listed again every 100 ms while a pattern
// matches nothing, for up to wait.
func findWithin(ctx context.Context, named []Named, wait time.Duration) ([]*process, error) {
	deadline := time.Now().Add(wait)
	for {
		procs, err := findProcesses(named)
		if !errors.Is(err, errNoMatch) || time.Now().After(deadline) {
			return procs, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// findProcesses resolves the named processes: each PID, and every process
// whose command line holds a pattern (svclab itself left out), in PID
// order, each once. A name that finds nothing is an error: a run would
// sample less than the user asked for.
func findProcesses(named []Named) ([]*process, error) {
	if len(named) == 0 {
		return nil, nil
	}
	fs, err := procfs.NewFS(procfs.DefaultMountPoint)
	if err != nil {
		return nil, fmt.Errorf("deploy.external.processes: %w", err)
	}
	r, err := procstat.Open()
	if err != nil {
		return nil, fmt.Errorf("deploy.external.processes: %w", err)
	}
	var all procfs.Procs
	seen := map[int]bool{}
	var out []*process
	// add adds p under name unless a name before found it.
	add := func(p procfs.Proc, name string) (bool, error) {
		if seen[p.PID] {
			return false, nil
		}
		st, err := p.Stat()
		if err != nil {
			return false, fmt.Errorf("process %d: %w", p.PID, err)
		}
		seen[p.PID] = true
		out = append(out, &process{
			info:  deploy.ProcessInfo{Name: name, Role: deploy.RoleExternal, PID: p.PID},
			src:   r.Process(p.PID),
			start: st.Starttime,
			done:  make(chan struct{}),
		})
		return true, nil
	}
	for _, n := range named {
		if n.Pattern == "" {
			p, err := fs.Proc(n.PID)
			if err != nil {
				return nil, fmt.Errorf("deploy.external.processes: no process %d: %w", n.PID, err)
			}
			comm, _ := p.Comm()
			if _, err := add(p, fmt.Sprintf("%s[%d]", comm, n.PID)); err != nil {
				return nil, fmt.Errorf("deploy.external.processes: %w", err)
			}
			continue
		}
		if all == nil {
			if all, err = fs.AllProcs(); err != nil {
				return nil, fmt.Errorf("deploy.external.processes: %w", err)
			}
		}
		i, matched := 0, false
		for _, p := range all {
			if p.PID == os.Getpid() {
				continue
			}
			args, err := p.CmdLine()
			if err != nil || !strings.Contains(strings.Join(args, " "), n.Pattern) {
				continue
			}
			matched = true
			// A process gone since the listing was not the system's
			// to sample.
			if added, err := add(p, fmt.Sprintf("%s#%d", n.Pattern, i)); added && err == nil {
				i++
			}
		}
		if !matched {
			return nil, fmt.Errorf("deploy.external.processes: %w %q", errNoMatch, n.Pattern)
		}
	}
	slices.SortStableFunc(out, func(a, b *process) int { return a.info.PID - b.info.PID })
	return out, nil
}

// watch reports on exited each process that leaves /proc (or becomes a
// zombie, or whose PID another process took), until ctx ends.
func watch(ctx context.Context, procs []*process, exited chan<- deploy.Process) {
	if len(procs) == 0 {
		return
	}
	fs, err := procfs.NewFS(procfs.DefaultMountPoint)
	if err != nil {
		return
	}
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	live := slices.Clone(procs)
	for len(live) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		live = slices.DeleteFunc(live, func(p *process) bool {
			status := gone(fs, p)
			if status == "" {
				return false
			}
			p.ended(status)
			select {
			case exited <- p:
			default: // buffered for every process; never blocks
			}
			return true
		})
	}
}

// gone says how p ended, or "" while it runs.
func gone(fs procfs.FS, p *process) string {
	proc, err := fs.Proc(p.info.PID)
	if err != nil {
		return "exited (it is not svclab's child, so its exit status is its parent's to read)"
	}
	st, err := proc.Stat()
	switch {
	case err != nil:
		return "exited (it is not svclab's child, so its exit status is its parent's to read)"
	case st.Starttime != p.start:
		return "exited, and another process now has its PID"
	case st.State == "Z" || st.State == "X":
		return "exited (a zombie its parent has not reaped)"
	}
	return ""
}

// pidExists reports whether a process with pid runs now.
func pidExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
