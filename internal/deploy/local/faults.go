package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hopfault"
	"github.com/svclab/svclab/internal/runtime"
)

// Faults on the hops into a group ([deploy.faults]) need something on the
// path to act: every endpoint of a targeted group is reached through a
// toxiproxy proxy on loopback (toxiproxy used as a library), to which
// each of the fault's windows adds its toxics (internal/deploy/hopfault). Groups no fault
// targets are dialled directly, as without faults.

// Kill ends a replica with SIGKILL, as a crash would, and then takes it
// out of its callers' endpoint sets (deploy.Killer).
func (d *Deployment) Kill(group, replica int) (deploy.ProcessInfo, error) {
	d.mu.Lock()
	var p *process
	n := 0
	for _, q := range d.processes {
		if q.group == group {
			if n == replica {
				p = q
				break
			}
			n++
		}
	}
	d.mu.Unlock()
	if p == nil || p.exited() {
		return deploy.ProcessInfo{}, fmt.Errorf("deploy.faults.kill: group %s has no running replica %d", d.topo.Groups[group].Name, replica)
	}
	p.retired.Store(true) // its exit is no crash
	signalGroup(p, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		return p.info, fmt.Errorf("deploy.faults.kill: %s did not die on SIGKILL within 5s", p.info)
	}
	var errs []error
	if len(d.live(group)) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), d.stopTimeout)
		defer cancel()
		errs = append(errs, d.pushPeers(ctx, group))
	}
	d.mu.Lock()
	d.processes = slices.DeleteFunc(d.processes, func(q *process) bool { return q == p })
	d.mu.Unlock()
	errs = append(errs, p.removeCgroup())
	return p.info, errors.Join(errs...)
}

// faultHops are the proxies in front of the endpoints of targeted groups.
type faultHops struct {
	mu sync.Mutex
	// byAddr maps an endpoint's address to its proxy, so that an
	// endpoint set pushed again maps to the same proxy.
	byAddr map[string]*toxiproxy.Proxy
	// byGroup lists each targeted group's proxies, in creation order.
	byGroup map[int][]*toxiproxy.Proxy
}

// faulted reports whether a hop fault targets group g.
func (d *Deployment) faulted(g int) bool {
	for _, f := range d.topo.Faults {
		if f.Link() && f.Group == g {
			return true
		}
	}
	return false
}

// faultPeers maps the endpoints of targeted groups in peers to their
// proxies, making those that do not exist yet. On a deploy.Network (the
// netns deployer's) the endpoints are the network's to reach, so they are
// left alone, and StartFault refuses.
func (d *Deployment) faultPeers(peers map[string][]runtime.Endpoint) (map[string][]runtime.Endpoint, error) {
	if d.net != nil || !slices.ContainsFunc(d.topo.Faults, runtime.Fault.Link) {
		return peers, nil
	}
	d.hops.mu.Lock()
	defer d.hops.mu.Unlock()
	if d.hops.byAddr == nil {
		d.hops.byAddr, d.hops.byGroup = map[string]*toxiproxy.Proxy{}, map[int][]*toxiproxy.Proxy{}
	}
	out := make(map[string][]runtime.Endpoint, len(peers))
	for c, eps := range peers {
		g := d.topo.GroupOf(c)
		if !d.faulted(g) {
			out[c] = eps
			continue
		}
		// runtime.Resolve refuses a hop fault off TCP, where the
		// proxies could not stand.
		mapped := make([]runtime.Endpoint, 0, len(eps))
		for _, ep := range eps {
			p, ok := d.hops.byAddr[ep.Addr]
			if !ok {
				var err error
				if p, err = hopfault.Listen(ep.Addr); err != nil {
					return nil, err
				}
				d.hops.byAddr[ep.Addr] = p
				d.hops.byGroup[g] = append(d.hops.byGroup[g], p)
			}
			ep.Addr = p.Listen
			mapped = append(mapped, ep)
		}
		out[c] = mapped
	}
	return out, nil
}

// StartFault makes f act on every proxy into f.Group (deploy.HopFaulter).
func (d *Deployment) StartFault(f runtime.Fault) (stop func() error, err error) {
	if d.net != nil {
		return nil, fmt.Errorf("deploy.faults.%s: not on this deployer's network yet (faults act on the local deployer's hops)", f.Kind)
	}
	d.hops.mu.Lock()
	proxies := append([]*toxiproxy.Proxy(nil), d.hops.byGroup[f.Group]...)
	d.hops.mu.Unlock()
	if len(proxies) == 0 { // runtime.Resolve refuses a hop no group calls
		return nil, fmt.Errorf("deploy.faults.%s: no proxy on the hop into group %s", f.Kind, d.topo.Groups[f.Group].Name)
	}
	return hopfault.Start(f, proxies)
}

// closeHops stops every fault proxy.
func (d *Deployment) closeHops() {
	d.hops.mu.Lock()
	defer d.hops.mu.Unlock()
	for _, p := range d.hops.byAddr {
		p.Stop()
	}
	d.hops.byAddr, d.hops.byGroup = nil, nil
}
