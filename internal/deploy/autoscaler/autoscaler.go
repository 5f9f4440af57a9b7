// Package autoscaler drives the autoscaler of each [deploy.autoscale]
// group of a running deployment: every sync period it reads each live
// replica's CPU and memory through the replica's deploy.ResourceSource
// (procstat, or whatever source the process was given, such as its
// cgroup's counters), asks package autoscale for the desired count,
// records the decision (deploy.ScaleEvent) and scales through the
// deployment, which drains a replica before it stops it.
//
// It knows a deployment only through Target: the replicas of a group and
// a way to resize it. Starting, draining and rewiring replicas is the
// deployer's.
package autoscaler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/autoscale"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
)

// Replica is one live replica of a group, as the autoscaler reads it.
type Replica struct {
	// Name is unique within the deployment and never reused (`hop2#3`):
	// the CPU rate is the difference of two readings of one name.
	Name string
	// ReadyAt is when the replica passed its health checks; zero while it
	// has not.
	ReadyAt time.Time
	// Resources samples its CPU and memory.
	Resources deploy.ResourceSource
}

// Target is the deployment the autoscalers resize.
type Target interface {
	// Live lists the replicas of group that take calls.
	Live(group int) []Replica
	// Scale resizes the group named group to n replicas.
	Scale(ctx context.Context, group string, n int) error
}

// Autoscalers runs one loop per autoscaled group until Stop.
type Autoscalers struct {
	target Target
	logf   func(format string, args ...any)
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	events []deploy.ScaleEvent
}

// Start starts the loops of the groups of topo that have one. logf says
// what they decide and what fails (a scale runs in the background, so
// its error has no caller).
func Start(topo *runtime.Topology, t Target, logf func(format string, args ...any)) (*Autoscalers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	as := &Autoscalers{target: t, logf: logf, cancel: cancel}
	for g, grp := range topo.Groups {
		if grp.Autoscale == nil {
			continue
		}
		a, err := autoscale.New(config(grp.Autoscale))
		if err != nil {
			as.Stop()
			return nil, fmt.Errorf("group %s: %w", grp.Name, err)
		}
		as.wg.Add(1)
		go func() {
			defer as.wg.Done()
			as.loop(ctx, g, grp.Name, a, grp.Autoscale.SyncPeriod.D())
		}()
	}
	return as, nil
}

// Stop ends the loops, waiting for a scale in progress. A nil
// *Autoscalers has none.
func (as *Autoscalers) Stop() {
	if as == nil {
		return
	}
	as.cancel()
	as.wg.Wait()
}

// Events returns every decision of the autoscalers, oldest first.
func (as *Autoscalers) Events() []deploy.ScaleEvent {
	if as == nil {
		return nil
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.events)
}

func config(a *runtime.Autoscale) autoscale.Config {
	cfg := autoscale.Config{Min: a.Min, Max: a.Max, Tolerance: a.Tolerance, ScaleDownWindow: a.ScaleDownWindow.D()}
	if a.CPUTarget > 0 {
		cfg.Targets = append(cfg.Targets, autoscale.Target{Metric: autoscale.CPU, Utilization: a.CPUTarget, Request: a.CPURequest})
	}
	if a.MemoryTarget > 0 {
		cfg.Targets = append(cfg.Targets, autoscale.Target{Metric: autoscale.Memory, Utilization: a.MemoryTarget, Request: float64(a.MemoryRequest)})
	}
	return cfg
}

// cpuReading is a replica's CPU counter at one sync.
type cpuReading struct {
	t       time.Time
	seconds float64
}

func (as *Autoscalers) loop(ctx context.Context, g int, name string, a *autoscale.Autoscaler, period time.Duration) {
	prev := map[string]cpuReading{}
	read := func(now time.Time) []autoscale.Replica {
		next := map[string]cpuReading{}
		var out []autoscale.Replica
		for _, p := range as.target.Live(g) {
			r := autoscale.Replica{Name: p.Name, Ready: !p.ReadyAt.IsZero(), Usage: map[string]float64{}}
			u, err := p.Resources.Sample(ctx)
			if err == nil {
				next[p.Name] = cpuReading{now, u.CPUSeconds}
				r.Usage[autoscale.Memory] = float64(u.RSSBytes)
				// A replica's CPU is the rate since the last sync; a
				// replica that has none yet has no CPU metric, as a
				// new pod has none until the metrics server scrapes
				// it twice.
				if last, ok := prev[p.Name]; ok && now.After(last.t) {
					r.Usage[autoscale.CPU] = (u.CPUSeconds - last.seconds) / now.Sub(last.t).Seconds()
					r.CPUWhileReady = r.Ready && !last.t.Before(p.ReadyAt)
				}
			}
			out = append(out, r)
		}
		prev = next
		return out
	}
	read(time.Now())
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		replicas := read(now)
		dec := a.Decide(now, len(replicas), replicas)
		as.record(name, dec)
		if dec.Desired == dec.Current {
			continue
		}
		as.logf("autoscaler: group %s from %d to %d replicas (%s)", name, dec.Current, dec.Desired, summary(dec))
		if err := as.target.Scale(ctx, name, dec.Desired); err != nil {
			if ctx.Err() == nil {
				as.logf("autoscaler: %v", err)
			}
			continue
		}
		a.Scaled(time.Now(), dec.Current, dec.Desired)
	}
}

// record keeps one row per metric of a decision.
func (as *Autoscalers) record(group string, dec autoscale.Decision) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, p := range dec.Proposals {
		ev := deploy.ScaleEvent{
			Time: dec.Time, Group: group, Metric: p.Metric,
			Utilization: p.Utilization, Target: p.Target,
			Current: dec.Current, Proposed: p.Replicas, Desired: dec.Desired, Reason: dec.Reason,
		}
		if p.Err != nil {
			ev.Error = p.Err.Error()
		}
		as.events = append(as.events, ev)
	}
}

func summary(dec autoscale.Decision) string {
	s := ""
	for i, p := range dec.Proposals {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d%% of target %d%%", p.Metric, p.Utilization, p.Target)
	}
	if dec.Reason != "" {
		s += "; " + dec.Reason
	}
	return s
}
