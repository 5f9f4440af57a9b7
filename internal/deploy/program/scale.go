package program

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/autoscaler"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/runtime"
)

// The autoscalers of [deploy.autoscale] (internal/deploy/autoscaler) see a
// deployment of programs as they see the local deployer's: each
// component's live replicas, read through their resource sources, and
// Scale. A component that scales always has a front, so its callers and
// the load keep one address while its replicas come and go: a new replica
// joins the front once healthy, and one scaled in leaves it before it is
// stopped.

// Live lists the running replicas of group g's program, for the
// autoscaler (autoscaler.Target).
func (d *deployment) Live(g int) []autoscaler.Replica {
	procs := d.live(d.topo.Groups[g].Components[0])
	d.mu.Lock() // readyAt is set under it
	defer d.mu.Unlock()
	out := make([]autoscaler.Replica, len(procs))
	for i, p := range procs {
		out[i] = autoscaler.Replica{Name: p.info.Name, ReadyAt: p.readyAt, Resources: p.Resources()}
	}
	return out
}

// live are component name's running replicas, oldest first.
func (d *deployment) live(name string) []*process {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*process
	for _, p := range d.procs {
		if p.component == name && p.info.Role == deploy.RoleHost && !p.exited() {
			out = append(out, p)
		}
	}
	return out
}

// Scale resizes the program of the group named group to n replicas
// (autoscaler.Target): new ones join its front once healthy; the newest
// leave it, and are then stopped, when it shrinks.
func (d *deployment) Scale(ctx context.Context, group string, n int) error {
	d.scaleMu.Lock()
	defer d.scaleMu.Unlock()
	g := slices.IndexFunc(d.topo.Groups, func(gr runtime.Group) bool { return gr.Name == group })
	if g < 0 {
		return fmt.Errorf("scale: no group %s", group)
	}
	name := d.topo.Groups[g].Components[0]
	if d.fronts[name] == nil {
		return fmt.Errorf("scale: component %s has no front to scale behind (it has neither [deploy.autoscale] nor replicas)", name)
	}
	if n < 1 {
		return fmt.Errorf("scale: component %s to %d replicas: at least one", name, n)
	}
	cur := d.live(name)
	if n > len(cur) {
		return d.scaleUp(ctx, name, n-len(cur))
	}
	return d.drop(ctx, cur[n:])
}

// scaleUp starts k more replicas of component name, each on a new port
// and under a new ordinal, and adds them to its front once every one is
// healthy; on an error none stays.
func (d *deployment) scaleUp(ctx context.Context, name string, k int) error {
	var started []*process
	for range k {
		l, err := ports.Listen()
		if err != nil {
			return errors.Join(fmt.Errorf("scale: pick a port for component %s: %w", name, err), d.drop(ctx, started))
		}
		_ = l.Close() // the program binds it
		d.replicas[name] = append(d.replicas[name], l.Addr().String())
		p, err := d.startReplica(name, len(d.replicas[name])-1, d.specDir, d.reader, d.opts)
		if err != nil {
			return errors.Join(fmt.Errorf("scale: %w", err), d.drop(ctx, started))
		}
		d.mu.Lock()
		d.procs = append(d.procs, p)
		d.mu.Unlock()
		started = append(started, p)
	}
	if err := d.waitHealthy(ctx, started, d.opts.ReadyTimeout); err != nil {
		return errors.Join(fmt.Errorf("scale: %w", err), d.drop(ctx, started))
	}
	now := time.Now()
	d.mu.Lock()
	for _, p := range started {
		p.readyAt = now
	}
	d.mu.Unlock()
	for _, p := range started {
		go d.watch(p)
	}
	d.updateFront(name)
	return nil
}

// drop takes procs out of the deployment and their front, as processes
// meant to end, and stops them.
func (d *deployment) drop(ctx context.Context, procs []*process) error {
	if len(procs) == 0 {
		return nil
	}
	for _, p := range procs {
		p.retired.Store(true)
	}
	d.mu.Lock()
	d.procs = slices.DeleteFunc(d.procs, func(q *process) bool { return slices.Contains(procs, q) })
	d.mu.Unlock()
	d.updateFront(procs[0].component)
	errs := make([]error, len(procs))
	for i, p := range procs {
		errs[i] = p.stop(ctx, stopGrace)
	}
	return errors.Join(errs...)
}

// ScaleEvents returns every decision of the deployment's autoscalers
// (deploy.Capabilities.Scaling).
func (d *deployment) ScaleEvents() []deploy.ScaleEvent { return d.as.Events() }

// startAutoscalers starts the loops of the components that have one.
func (d *deployment) startAutoscalers() (err error) {
	d.as, err = autoscaler.Start(d.topo, d, func(format string, args ...any) {
		if d.opts.Log != nil {
			fmt.Fprintf(d.opts.Log, "[svclab] deployment %s: "+format+"\n", append([]any{d.id}, args...)...)
		}
	})
	return err
}
