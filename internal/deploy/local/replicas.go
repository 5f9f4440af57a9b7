package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Replicas: a group runs as one or more identical processes, each with its
// own listeners and control socket. Every caller holds the endpoint set of
// each component it calls in another group, and its balancer
// (internal/runtime/balancer) spreads calls over that set. The deployer
// owns the sets: it pushes a new one to every replica of every calling
// group (Control.UpdatePeers) when a replica joins, is scaled away, or dies,
// so no caller restarts.

// replicaName names a replica's process: the group's name alone while the
// group can only ever have one process, as before replicas existed.
func (d *Deployment) replicaName(g, ordinal int) string {
	grp := d.topo.Groups[g]
	if grp.Replicas == 1 && grp.Autoscale == nil {
		return grp.Name
	}
	return grp.Name + "#" + strconv.Itoa(ordinal)
}

// live lists the processes of group g that take calls: not scaled away,
// not exited.
func (d *Deployment) live(g int) []*process {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*process
	for _, p := range d.processes {
		if p.group == g && !p.retired.Load() && !p.exited() {
			out = append(out, p)
		}
	}
	return out
}

// Replicas is the number of processes of group taking calls.
func (d *Deployment) Replicas(group string) (int, error) {
	g, err := d.groupIndex(group)
	if err != nil {
		return 0, err
	}
	return len(d.live(g)), nil
}

// peersOf maps each component group g calls in another group to the
// endpoints of that group's live replicas; extra adds sockets bound but not
// yet started (a deployment's first replicas).
func (d *Deployment) peersOf(g int, extra []*sockets) map[string][]runtime.Endpoint {
	p := d.topo
	out := map[string][]runtime.Endpoint{}
	for _, dep := range p.Peers(g) {
		j := p.GroupOf(dep)
		eps := []runtime.Endpoint{}
		for _, r := range d.live(j) {
			eps = append(eps, r.listen[dep])
		}
		for _, s := range extra {
			if s.group == j {
				eps = append(eps, runtime.EndpointOf(s.listen[dep].GetEndpoint()))
			}
		}
		out[dep] = eps
	}
	return out
}

func endpointSets(peers map[string][]runtime.Endpoint) map[string]*hostv1.EndpointSet {
	out := map[string]*hostv1.EndpointSet{}
	for c, eps := range peers {
		set := &hostv1.EndpointSet{}
		for _, ep := range eps {
			set.Endpoints = append(set.Endpoints, ep.Proto())
		}
		out[c] = set
	}
	return out
}

// callers lists the groups with a component that calls one of group g's.
func (d *Deployment) callers(g int) []int {
	p := d.topo
	var out []int
	for j, grp := range p.Groups {
		if j == g {
			continue
		}
		calls := false
		for _, name := range grp.Components {
			c, _ := p.Component(name)
			for _, dep := range c.Deps {
				calls = calls || p.GroupOf(dep) == g
			}
		}
		if calls {
			out = append(out, j)
		}
	}
	return out
}

// pushPeers sends every live replica of every group calling group g the
// endpoint sets of g's live replicas. Each answers once its calls in flight
// to replicas left out have finished (internal/runtime/balancer, Update),
// so when pushPeers returns they can be stopped without refusing a call.
func (d *Deployment) pushPeers(ctx context.Context, g int) error {
	// One push at a time, each computed from the state at its turn: a
	// death reported while a scale pushes cannot overwrite a newer set
	// with an older one.
	d.pushMu.Lock()
	defer d.pushMu.Unlock()
	if g == d.topo.EntryGroup() {
		d.pushClients()
		d.pushGateway()
	}
	if err := d.pushScrapeTargets(); err != nil {
		d.logf("deployment %s: %v", d.id, err)
	}
	if ok, err := d.sidecars.SetUpstreams(g); ok {
		return err // the callers' hosts call through their sidecars (internal/deploy/proxies)
	}
	var errs []error
	for _, j := range d.callers(g) {
		peers := map[string][]runtime.Endpoint{}
		for c, eps := range d.peersOf(j, nil) {
			if d.topo.GroupOf(c) == g {
				peers[c] = eps
			}
		}
		for _, r := range d.live(j) {
			if err := d.controlProcess(r, func(cc hostv1.ControlClient) error {
				_, err := cc.UpdatePeers(ctx, &hostv1.UpdatePeersRequest{Peers: endpointSets(peers)})
				return err
			}); err != nil {
				errs = append(errs, fmt.Errorf("%s: update peers: %w", r.info.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// forget takes a replica that died out of its callers' sets, so that they
// stop sending to it at once rather than when their health checks notice.
func (d *Deployment) forget(p *process) {
	if len(d.live(p.group)) == 0 {
		return // nothing to send to instead; calls fail UNAVAILABLE either way
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.stopTimeout)
	defer cancel()
	if err := d.pushPeers(ctx, p.group); err != nil {
		d.logf("deployment %s: after %s exited: %v", d.id, p.info.Name, err)
	}
}

// startAll binds and starts the first replicas of every group: every
// socket first, so that each host's peers are known and can be connected
// to before they accept.
func (d *Deployment) startAll(ctx context.Context, cfgJSON json.RawMessage) error {
	var all []*sockets
	defer func() { closeAll(all) }()
	for g, grp := range d.topo.Groups {
		for range grp.Replicas {
			s, err := d.bind(g, d.nextOrdinal[g])
			if err != nil {
				return err
			}
			d.nextOrdinal[g]++
			all = append(all, s)
		}
	}
	mctx, cancel := context.WithTimeout(ctx, d.opts.ReadyTimeout)
	err := d.meshAfterBind(mctx, all)
	cancel()
	if err != nil {
		return err
	}
	if err := d.layOutSidecars(all); err != nil {
		return fmt.Errorf("deployment %s: %w", d.id, err)
	}
	// Every config before any start: peersOf counts started processes.
	hcs := make([]*hostv1.HostConfig, len(all))
	for i, s := range all {
		peers, err := d.place(s.group, d.peersOf(s.group, all))
		if err != nil {
			return err
		}
		hcs[i] = d.hostConfig(cfgJSON, s, peers)
		d.mesh.Configure(hcs[i], s.metrics, d.topo.Groups[s.group])
		d.configureResilience(hcs[i])
	}
	for i, s := range all {
		p, err := d.start(hcs[i], s)
		if err != nil {
			return fmt.Errorf("deployment %s: start group %s: %w", d.id, d.topo.Groups[s.group].Name, err)
		}
		d.mu.Lock()
		d.processes = append(d.processes, p)
		d.mu.Unlock()
	}
	if err := d.startSidecars(); err != nil {
		return fmt.Errorf("deployment %s: %w", d.id, err)
	}
	return nil
}

// logf writes a line about the deployment to Options.Log, when set.
func (d *Deployment) logf(format string, args ...any) {
	if d.opts.Log != nil {
		writeLine(d.opts.Log, fmt.Sprintf("[svclab] "+format+"\n", args...))
	}
}

// removeCgroup removes the cgroup of a replica that has exited, if it has
// one; Stop removes those of the processes still listed.
func (p *process) removeCgroup() error {
	if p.cg == nil {
		return nil
	}
	return p.cg.Remove()
}

// place maps group g's peers through the deployment's Network (the address
// g's host dials for each), or returns them as they are without one.
func (d *Deployment) place(g int, peers map[string][]runtime.Endpoint) (map[string][]runtime.Endpoint, error) {
	if d.net == nil {
		return d.faultPeers(peers)
	}
	out := make(map[string][]runtime.Endpoint, len(peers))
	for c, eps := range peers {
		j := d.topo.GroupOf(c)
		out[c] = []runtime.Endpoint{}
		for _, ep := range eps {
			mapped, err := d.net.Peer(g, j, ep)
			if err != nil {
				return nil, fmt.Errorf("group %s: peer %s: %w", d.topo.Groups[g].Name, c, err)
			}
			out[c] = append(out[c], mapped)
		}
	}
	return out, nil
}
