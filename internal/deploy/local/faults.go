package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Faults on the hops into a group ([deploy.faults]) need something on the
// path to act: every endpoint of a targeted group is reached through a
// toxiproxy proxy on loopback (toxiproxy used as a library), to which
// each of the fault's windows adds a toxic: timeout for link_cut,
// reset_peer for reset, latency for latency_spike. Groups no fault
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

// toxiServer carries the proxies' (disabled) metrics and silent logger.
var toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())

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
		mapped := make([]runtime.Endpoint, 0, len(eps))
		for _, ep := range eps {
			if ep.Network != "tcp" {
				return nil, fmt.Errorf("deploy.faults: the hop into group %s is on network %q; faults act on tcp hops (leave deploy.network out)", d.topo.Groups[g].Name, ep.Network)
			}
			p, ok := d.hops.byAddr[ep.Addr]
			if !ok {
				p = toxiproxy.NewProxy(toxiServer, "fault→"+ep.Addr, "127.0.0.1:0", ep.Addr)
				nop := zerolog.Nop()
				p.Logger = &nop
				if err := p.Start(); err != nil {
					return nil, fmt.Errorf("deploy.faults: proxy for %s: %w", ep, err)
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
	if len(proxies) == 0 {
		return nil, fmt.Errorf("deploy.faults.%s: no other group calls group %s, so its hop carries nothing to fault", f.Kind, d.topo.Groups[f.Group].Name)
	}
	var bodies []string
	name := "fault_" + f.Kind
	switch f.Kind {
	case spec.FaultLinkCut:
		// A partition: nothing passes either way, and nothing is
		// refused either; what was sent is delivered when the link
		// returns, as TCP retransmits it (toxiproxy's timeout toxic
		// with no timeout holds the data until it is removed).
		for _, dir := range []string{"upstream", "downstream"} {
			bodies = append(bodies, fmt.Sprintf(`{"name":"%s_%s","type":"timeout","stream":%q,"toxicity":1,"attributes":{"timeout":0}}`, name, dir, dir))
		}
	case spec.FaultReset:
		// A reset on the first bytes the caller sends: the connection is
		// refused with RST as it is used, as a crashed peer's kernel does.
		bodies = append(bodies, fmt.Sprintf(`{"name":%q,"type":"reset_peer","stream":"upstream","toxicity":%g,"attributes":{"timeout":0}}`, name, f.Fraction))
	case spec.FaultLatencySpike:
		bodies = append(bodies, fmt.Sprintf(`{"name":%q,"type":"latency","stream":"downstream","toxicity":%g,"attributes":{"latency":%d,"jitter":0}}`, name, f.Fraction, f.Delay.Milliseconds()))
	default:
		return nil, fmt.Errorf("deploy.faults: %q does not act on a hop", f.Kind)
	}
	type added struct {
		p    *toxiproxy.Proxy
		name string
	}
	var done []added
	remove := func() error {
		var errs []error
		for _, a := range done {
			errs = append(errs, a.p.Toxics.RemoveToxic(context.Background(), a.name))
		}
		return errors.Join(errs...)
	}
	for _, p := range proxies {
		for _, toxic := range bodies {
			t, err := p.Toxics.AddToxicJson(strings.NewReader(toxic))
			if err != nil {
				return nil, errors.Join(fmt.Errorf("deploy.faults.%s on the hop to %s: %w", f.Kind, p.Upstream, err), remove())
			}
			done = append(done, added{p, t.Name})
		}
	}
	return remove, nil
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
