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
// Scale. A component that scales is always reached through what balances
// over its replicas, so its callers and the load keep one address while
// its replicas come and go: a front, or with sidecars its callers'
// proxies (and the entry's front before its replicas' ingress listeners).
// A new replica (with its own proxies) joins them once healthy, and one
// scaled in leaves them before it is stopped (and then its proxies).

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
	if gr := d.topo.Groups[g]; gr.Replicas == 1 && gr.Autoscale == nil {
		return fmt.Errorf("scale: component %s has nothing that balances over its replicas to scale behind (it has neither [deploy.autoscale] nor replicas)", name)
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
// and under a new ordinal (with sidecars, each after its own proxies),
// and adds them to its front or its callers' proxies once every one is
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
		i := len(d.replicas[name]) - 1
		if err := d.addReplicaProxies(ctx, name, i); err != nil {
			return errors.Join(fmt.Errorf("scale: %w", err), d.retireProxies(ctx, d.replicas[name][i]), d.drop(ctx, started))
		}
		p, err := d.startReplica(name, i, d.specDir, d.reader, d.opts)
		if err != nil {
			err = errors.Join(err, d.retireProxies(ctx, d.replicas[name][i]))
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
		d.watchProxies(p.addr)
	}
	d.updateFront(name)
	return nil
}

// drop takes procs out of the deployment and of what balances over
// them, as processes meant to end, and stops them, then their proxies.
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
	for _, p := range procs {
		errs = append(errs, d.retireProxies(ctx, p.addr))
	}
	return errors.Join(errs...)
}

// ScaleEvents returns every decision of the deployment's autoscalers
// (deploy.Capabilities.Scaling).
func (d *deployment) ScaleEvents() []deploy.ScaleEvent { return d.as.Events() }

// startAutoscalers starts the loops of the components that have one.
func (d *deployment) startAutoscalers() (err error) {
	d.as, err = autoscaler.Start(d.topo, d, d.logf)
	return err
}
