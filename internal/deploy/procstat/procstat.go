// Package procstat reads a process's CPU time and resident memory from
// /proc: the resource source of every deployer whose processes run on this
// machine's kernel, and of the load generator's own process.
package procstat

import (
	"context"
	"fmt"
	"os"

	"github.com/prometheus/procfs"

	"github.com/svclab/svclab/internal/deploy"
)

// Reader reads /proc.
type Reader struct{ fs procfs.FS }

// Open opens /proc.
func Open() (*Reader, error) {
	fs, err := procfs.NewFS(procfs.DefaultMountPoint)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", procfs.DefaultMountPoint, err)
	}
	return &Reader{fs: fs}, nil
}

// Process returns the source of process pid. A process that is gone, or
// not yet started, fails each Sample.
func (r *Reader) Process(pid int) *Source { return &Source{fs: r.fs, pid: pid} }

// Self is the source of the calling process.
func Self() (*Source, error) {
	r, err := Open()
	if err != nil {
		return nil, err
	}
	return r.Process(os.Getpid()), nil
}

// Source reads one process's counters; it is a deploy.ResourceSource.
type Source struct {
	fs  procfs.FS
	pid int
}

// Sample reads /proc/PID/stat and /proc/PID/smaps_rollup.
func (s *Source) Sample(context.Context) (deploy.Usage, error) {
	p, err := s.fs.Proc(s.pid)
	if err != nil {
		return deploy.Usage{}, fmt.Errorf("process %d: %w", s.pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return deploy.Usage{}, fmt.Errorf("process %d: %w", s.pid, err)
	}
	return deploy.Usage{CPUSeconds: st.CPUTime(), RSSBytes: int64(st.ResidentMemory()), PSSBytes: pss(p)}, nil
}

// pss is p's proportional set size, or 0 when the kernel does not tell
// (smaps_rollup came with Linux 4.14; another user's process hides it
// from an unprivileged reader).
func pss(p procfs.Proc) int64 {
	r, err := p.ProcSMapsRollup()
	if err != nil {
		return 0
	}
	return int64(r.Pss)
}
