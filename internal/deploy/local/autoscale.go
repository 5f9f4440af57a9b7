package local

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

// The autoscaler's driving loop: every sync period it reads each live
// replica's CPU and memory through the replica's deploy.ResourceSource
// (procstat, or whatever source the process was given, such as its
// cgroup's counters), asks package autoscale for the desired count, records
// the decision and scales with Scale, which drains a replica before it
// stops it.

// autoscalers runs one loop per autoscaled group until the deployment
// stops.
type autoscalers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	events []deploy.ScaleEvent
}

// startAutoscalers starts the loops of the groups that have one.
func (d *Deployment) startAutoscalers() error {
	ctx, cancel := context.WithCancel(context.Background())
	d.as.cancel = cancel
	for g, grp := range d.topo.Groups {
		if grp.Autoscale == nil {
			continue
		}
		a, err := autoscale.New(autoscaleConfig(grp.Autoscale))
		if err != nil {
			return fmt.Errorf("group %s: %w", grp.Name, err)
		}
		d.as.wg.Add(1)
		go func() {
			defer d.as.wg.Done()
			d.autoscaleLoop(ctx, g, a, grp.Autoscale.SyncPeriod.D())
		}()
	}
	return nil
}

// stopAutoscalers ends the loops, waiting for a scale in progress.
func (d *Deployment) stopAutoscalers() {
	if d.as.cancel != nil {
		d.as.cancel()
	}
	d.as.wg.Wait()
}

// ScaleEvents returns every decision of the deployment's autoscalers.
func (d *Deployment) ScaleEvents() []deploy.ScaleEvent {
	d.as.mu.Lock()
	defer d.as.mu.Unlock()
	return slices.Clone(d.as.events)
}

func autoscaleConfig(a *runtime.Autoscale) autoscale.Config {
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

func (d *Deployment) autoscaleLoop(ctx context.Context, g int, a *autoscale.Autoscaler, period time.Duration) {
	name := d.topo.Groups[g].Name
	prev := map[*process]cpuReading{}
	read := func(now time.Time) []autoscale.Replica {
		next := map[*process]cpuReading{}
		var out []autoscale.Replica
		for _, p := range d.live(g) {
			r := autoscale.Replica{Name: p.info.Name, Ready: !p.readyAt.IsZero(), Usage: map[string]float64{}}
			u, err := p.Resources().Sample(ctx)
			if err == nil {
				next[p] = cpuReading{now, u.CPUSeconds}
				r.Usage[autoscale.Memory] = float64(u.RSSBytes)
				// A replica's CPU is the rate since the last sync; a
				// replica that has none yet has no CPU metric, as a
				// new pod has none until the metrics server scrapes
				// it twice.
				if last, ok := prev[p]; ok && now.After(last.t) {
					r.Usage[autoscale.CPU] = (u.CPUSeconds - last.seconds) / now.Sub(last.t).Seconds()
					r.CPUWhileReady = r.Ready && !last.t.Before(p.readyAt)
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
		d.record(name, dec)
		if dec.Desired == dec.Current {
			continue
		}
		d.logf("deployment %s: autoscaler: group %s from %d to %d replicas (%s)", d.id, name, dec.Current, dec.Desired, summary(dec))
		if err := d.Scale(ctx, name, dec.Desired); err != nil {
			if ctx.Err() == nil {
				d.logf("deployment %s: autoscaler: %v", d.id, err)
			}
			continue
		}
		a.Scaled(time.Now(), dec.Current, dec.Desired)
	}
}

// record keeps one row per metric of a decision.
func (d *Deployment) record(group string, dec autoscale.Decision) {
	d.as.mu.Lock()
	defer d.as.mu.Unlock()
	for _, p := range dec.Proposals {
		ev := deploy.ScaleEvent{
			Time: dec.Time, Group: group, Metric: p.Metric,
			Utilization: p.Utilization, Target: p.Target,
			Current: dec.Current, Proposed: p.Replicas, Desired: dec.Desired, Reason: dec.Reason,
		}
		if p.Err != nil {
			ev.Error = p.Err.Error()
		}
		d.as.events = append(d.as.events, ev)
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
