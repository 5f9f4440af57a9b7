package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/procgroup"
)

// The sentinel's client side: an open-loop run starts `svclab hostclock
// --sentinel` beside itself (Options.Sentinel), for its measurement
// window, asking the run's mean gap between arrivals. A child process
// inherits the generator's cpuset, so it sees what the generator's CPUs
// did to a bare sleeper in that very window; the run's send lag is
// judged against that floor (audit.go).

// sentinelGrace is how long after the window's end the sentinel has to
// report before it is killed and the run falls back to the experiment's
// calibration.
const sentinelGrace = 3 * time.Second

// sentinelProc is one running sentinel.
type sentinelProc struct {
	cmd      *exec.Cmd
	group    *procgroup.Leader // signals its process group until it is reaped
	out, err bytes.Buffer
	done     chan struct{}
	waitErr  error
	startErr error
	// unwatch ends the watch on the run's context.
	unwatch func() bool
}

// meanGap is the mean time between arrivals of the profile over
// [from, to) (seconds since base): the window's length over the
// integral of the rate across it. It is 0 when the rate is 0 throughout.
func meanGap(segs []segment, from, to float64) time.Duration {
	area := 0.0
	for _, s := range segs {
		a, b := max(from, s.start), min(to, s.end)
		if b <= a {
			continue
		}
		area += (levelAt(segs, a) + levelAt(segs, b)) / 2 * (b - a)
	}
	if !(area > 0) {
		return 0
	}
	return time.Duration((to - from) / area * 1e9)
}

// startSentinel starts the sentinel for r's measurement window, nil when
// the run asks none (no Options.Sentinel, or a closed loop, which
// schedules no sends). A sentinel that cannot start is returned with
// startErr set: the run goes on and its audit says why it fell back.
func (r *runner) startSentinel(ctx context.Context) *sentinelProc {
	if r.opt.Sentinel == "" || r.closed {
		return nil
	}
	p := &sentinelProc{done: make(chan struct{})}
	gap := meanGap(r.segs, secs(r.mstart), secs(r.mend))
	if gap <= 0 {
		p.startErr = errors.New("the run's rate is 0 over the window: no gap to ask")
		close(p.done)
		return p
	}
	opt := hostclock.SentinelOptions{Gap: gap, Poisson: r.cfg.Arrival == "poisson",
		StartAt: r.base.Add(time.Duration(r.mstart)), Duration: time.Duration(r.mend - r.mstart)}
	p.cmd = exec.Command(r.opt.Sentinel, hostclock.SentinelArgs(opt)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	// Its own process group, killed with its parent: a sentinel never
	// outlives the run that started it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		p.startErr = fmt.Errorf("start %s: %w", r.opt.Sentinel, err)
		close(p.done)
		return p
	}
	p.group = procgroup.New(p.cmd)
	go func() {
		p.waitErr = p.group.Wait()
		close(p.done)
	}()
	// A canceled run ends its sentinel at once; its window is then
	// partial, as the run's is.
	p.unwatch = context.AfterFunc(ctx, p.interrupt)
	return p
}

// interrupt asks the sentinel to end its window now and report.
func (p *sentinelProc) interrupt() {
	if p.cmd != nil && p.cmd.Process != nil {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGINT)
		}
	}
}

// result waits for the sentinel's report: until the window's end plus
// sentinelGrace (windowEnd), after which it is killed. early says the
// run stopped sending before the window's end, so the sentinel is told
// to stop too.
func (p *sentinelProc) result(windowEnd time.Time, early bool) (*hostclock.Calibration, float64, error) {
	if p.startErr != nil {
		return nil, 0, p.startErr
	}
	defer p.unwatch()
	if early {
		p.interrupt()
	}
	t := time.NewTimer(time.Until(windowEnd.Add(sentinelGrace)))
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.group.Signal(syscall.SIGKILL)
		<-p.done
		return nil, 0, fmt.Errorf("the sentinel did not report within %v of the window's end", sentinelGrace)
	}
	if p.waitErr != nil {
		return nil, 0, fmt.Errorf("the sentinel failed: %w: %s", p.waitErr, strings.TrimSpace(lastLine(p.err.String())))
	}
	var w hostclock.Window
	if err := json.Unmarshal(p.out.Bytes(), &w); err != nil {
		return nil, 0, fmt.Errorf("the sentinel's report: %w", err)
	}
	c, err := w.Summary()
	if err != nil {
		return nil, 0, err
	}
	return &c, w.CPUPercent, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// windowFloor is the sentinel's report for the run, nil without one.
func (r *runner) windowFloor() (*hostclock.Calibration, float64, error) {
	if r.sentinel == nil {
		return nil, 0, nil
	}
	return r.sentinel.result(r.base.Add(time.Duration(r.mend)), r.stopAt < r.mend)
}
