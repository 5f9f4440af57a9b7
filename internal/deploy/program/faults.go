package program

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hopfault"
	"github.com/svclab/svclab/internal/deploy/telemetry"
	"github.com/svclab/svclab/internal/runtime"
)

// [deploy.faults] act on programs as on svclab's hosts, since every fault
// acts outside the process: a kill ends a program's process group with
// SIGKILL, and a hop fault (link_cut, reset, latency_spike) acts on a
// toxiproxy proxy that svclab puts on the hop into the targeted program,
// which its callers reach in place of the program: one before its front,
// or with sidecars one before each replica's inbound listener (a replica
// that a scale adds gets its own, which the fault windows open by then
// leave alone, as the local deployer's do). The load's calls into the
// entry are no hop (runtime.Resolve refuses a fault there), so the entry
// keeps its own address.

// killWait bounds the wait for a killed program to be reaped.
const killWait = 5 * time.Second

// hop is where callers reach component name at upstream (its own
// address, its front, or a replica's inbound listener): a fault proxy to
// upstream when a hop fault targets name, made once; upstream otherwise.
func (d *deployment) hop(name, upstream string) (string, error) {
	g := d.topo.GroupOf(name)
	if !slices.ContainsFunc(d.topo.Faults, func(f runtime.Fault) bool { return f.Link() && f.Group == g }) {
		return upstream, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.IndexFunc(d.hops[name], func(p *toxiproxy.Proxy) bool { return p.Upstream == upstream }); i >= 0 {
		return d.hops[name][i].Listen, nil
	}
	p, err := hopfault.Listen(upstream)
	if err != nil {
		return "", fmt.Errorf("component %s: %w", name, err)
	}
	if d.hops == nil {
		d.hops = map[string][]*toxiproxy.Proxy{}
	}
	d.hops[name] = append(d.hops[name], p)
	return p.Listen, nil
}

// routeHops makes every program reach each targeted component through
// its fault proxy (without sidecars: layOutSidecars puts the proxies
// between the sidecars).
func (d *deployment) routeHops() error {
	for _, name := range d.cfg.Names() {
		addr, err := d.hop(name, d.addrs[name])
		if err != nil {
			return err
		}
		for _, peers := range d.peers {
			peers[name] = addr
		}
	}
	return nil
}

// StartFault makes f act on the hop into its program
// (deploy.Capabilities.HopFaults).
func (d *deployment) StartFault(f runtime.Fault) (stop func() error, err error) {
	name := d.topo.Groups[f.Group].Components[0]
	d.mu.Lock()
	proxies := slices.Clone(d.hops[name])
	d.mu.Unlock()
	if len(proxies) == 0 { // runtime.Resolve refuses a hop no program calls
		return nil, fmt.Errorf("deploy.faults.%s: no proxy on the hop into component %s", f.Kind, name)
	}
	return hopfault.Start(f, proxies)
}

// Kill ends the replica-th running replica (oldest first) of group's
// program with SIGKILL to its process group, as a crash would, and takes
// it out of what balances over its replicas: its front, or its callers'
// proxies; with sidecars its own proxies are stopped then (once
// Prometheus has scraped them, under deploy.metrics)
// (deploy.Capabilities.Killer). Its exit is not reported on Exited: it
// was meant to die.
func (d *deployment) Kill(group, replica int) (deploy.ProcessInfo, error) {
	name := d.topo.Groups[group].Components[0]
	live := d.live(name)
	if replica >= len(live) {
		return deploy.ProcessInfo{}, fmt.Errorf("deploy.faults.kill: component %s has no running replica %d", name, replica)
	}
	p := live[replica]
	p.retired.Store(true)
	// A program already reaped (on its way out of live) gets nothing:
	// its group's id may be another's by now.
	if err := p.c.SignalGroup(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return p.info, fmt.Errorf("deploy.faults.kill: %s: %w", p.info, err)
	}
	select {
	case <-p.done:
	case <-time.After(killWait):
		return p.info, fmt.Errorf("deploy.faults.kill: %s did not die on SIGKILL within %s", p.info, killWait)
	}
	d.mu.Lock()
	d.procs = slices.DeleteFunc(d.procs, func(q *process) bool { return q == p })
	d.mu.Unlock()
	d.updateFront(name)
	ctx, cancel := context.WithTimeout(context.Background(), telemetry.LastScrapeWait+stopGrace+time.Second)
	defer cancel()
	err := d.retireProxies(ctx, p.addr)
	if p.cg != nil {
		err = errors.Join(err, p.cg.Remove())
	}
	return p.info, err
}

// closeHops stops every fault proxy.
func (d *deployment) closeHops() {
	for _, ps := range d.hops {
		for _, p := range ps {
			p.Stop()
		}
	}
}
