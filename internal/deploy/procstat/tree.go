package procstat

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/deploy"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux svclab runs on; procfs assumes the same).
const userHZ = 100

// Children are the pids of the live (or not yet reaped) child processes
// of pid's main thread.
func Children(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil, fmt.Errorf("children of process %d: %w", pid, err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("children of process %d: %q", pid, b)
		}
		out = append(out, n)
	}
	return out, nil
}

// Tree returns the source of a program that forks its workers, as nginx's
// master does: the process, its children, and the children it has reaped
// (whose CPU time the kernel adds to the parent's cutime and cstime), so
// that a worker replaced by a reload neither vanishes from the total nor
// makes it go back.
func (r *Reader) Tree(pid int) *TreeSource { return &TreeSource{r: r, pid: pid} }

// TreeSource is a deploy.ResourceSource for a process and its children.
type TreeSource struct {
	r   *Reader
	pid int
}

// Sample sums the counters of the process and its children.
func (s *TreeSource) Sample(ctx context.Context) (deploy.Usage, error) {
	p, err := s.r.fs.Proc(s.pid)
	if err != nil {
		return deploy.Usage{}, fmt.Errorf("process %d: %w", s.pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return deploy.Usage{}, fmt.Errorf("process %d: %w", s.pid, err)
	}
	u := deploy.Usage{
		CPUSeconds: st.CPUTime() + float64(st.CUTime+st.CSTime)/userHZ,
		RSSBytes:   int64(st.ResidentMemory()),
		PSSBytes:   pss(p),
	}
	kids, err := Children(s.pid)
	if err != nil {
		return deploy.Usage{}, err
	}
	for _, k := range kids {
		c, err := s.r.Process(k).Sample(ctx)
		if err != nil {
			continue // reaped since: its time is in the parent's now
		}
		u.CPUSeconds += c.CPUSeconds
		u.RSSBytes += c.RSSBytes
		u.PSSBytes += c.PSSBytes
	}
	return u, nil
}
