package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"time"

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
// endpoint sets of g's live replicas.
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
	if ok, err := d.pushSidecars(g); ok {
		return err // the callers' hosts call through their sidecars (sidecarscale.go)
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

// Scale makes n processes serve group: new replicas are started and, once
// they pass their health checks, added to every caller's endpoint set;
// surplus ones (the newest first, as a ReplicaSet removes the youngest
// pods) are taken out of every caller's set, drained of their calls in
// flight and stopped. Scale returns once the group has n live replicas.
// Calls to Scale are serialised.
func (d *Deployment) Scale(ctx context.Context, group string, n int) error {
	if n < 1 {
		return fmt.Errorf("scale group %s to %d: a group needs at least 1 process", group, n)
	}
	g, err := d.groupIndex(group)
	if err != nil {
		return err
	}
	if err := d.sidecarsScale(group); err != nil {
		return err
	}
	d.scaleMu.Lock()
	defer d.scaleMu.Unlock()
	select {
	case <-d.stopping:
		return fmt.Errorf("scale group %s: the deployment is stopping", group)
	default:
	}
	cur := d.live(g)
	switch {
	case n > len(cur):
		return d.scaleUp(ctx, g, n-len(cur))
	case n < len(cur):
		slices.SortFunc(cur, func(a, b *process) int { return b.ordinal - a.ordinal })
		return d.scaleDown(ctx, g, cur[:len(cur)-n])
	}
	return nil
}

// scaleUp starts k replicas of group g, waits until they are ready, and
// then tells the callers.
func (d *Deployment) scaleUp(ctx context.Context, g, k int) (err error) {
	name := d.topo.Groups[g].Name
	var started []*process
	d.mu.Lock()
	first := d.nextOrdinal[g]
	d.mu.Unlock()
	defer func() {
		if err != nil {
			// Not yet anyone's peer: killed, and left out of Processes;
			// a sidecar (after its host) first, as it is in its host's cgroup.
			for _, p := range slices.Backward(started) {
				p.retired.Store(true)
				signalGroup(p, syscall.SIGKILL)
				<-p.done
				_ = p.removeCgroup()
			}
			d.dropReplicaSidecars(g, first)
			err = fmt.Errorf("scale up group %s: %w", name, err)
		}
	}()
	for range k {
		d.mu.Lock()
		ordinal := d.nextOrdinal[g]
		d.nextOrdinal[g]++
		d.mu.Unlock()
		s, err := d.bind(g, ordinal)
		if err != nil {
			return err
		}
		sc, err := d.planReplicaSidecar(s)
		if err != nil {
			s.close()
			return err
		}
		peers, err := d.place(g, d.peersOf(g, nil))
		if err != nil {
			s.close()
			return err
		}
		hc := d.hostConfig(d.cfgJSON, s, peers)
		mi, err := d.mesh.metricsFor(s)
		if err != nil {
			s.close()
			return err
		}
		d.mesh.configure(hc, mi, d.topo.Groups[g])
		d.configureResilience(hc)
		p, err := d.start(hc, s, d.opts)
		s.close()
		if err != nil {
			return err
		}
		started = append(started, p)
		px, err := sc.start(p)
		if err != nil {
			return err
		}
		if px != nil {
			started = append(started, px)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, d.opts.ReadyTimeout)
	defer cancel()
	if err := d.waitReady(rctx, started); err != nil {
		return err
	}
	now := time.Now()
	d.mu.Lock()
	for _, p := range started {
		p.readyAt = now
		d.processes = append(d.processes, p)
		d.watchProcess(p)
	}
	d.mu.Unlock()
	d.logf("deployment %s: group %s scaled up to %d", d.id, name, len(d.live(g)))
	// The new replicas run whether or not every caller heard of them.
	if perr := d.pushPeers(ctx, g); perr != nil {
		return fmt.Errorf("scale up group %s: %w", name, perr)
	}
	return nil
}

// scaleDown takes the replicas out of every caller's endpoint set, so
// that no new call reaches them, then stops each over its control channel:
// it refuses new calls, finishes those in flight (for as long as the stop
// timeout allows) and exits.
func (d *Deployment) scaleDown(ctx context.Context, g int, victims []*process) error {
	for _, p := range victims {
		p.retired.Store(true)
	}
	var errs []error
	if err := d.pushPeers(ctx, g); err != nil {
		// A caller that still sends to a victim finds it draining
		// (UNAVAILABLE) and its health check takes it out.
		errs = append(errs, err)
	}
	for _, p := range victims {
		if err := d.stopReplica(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	d.mu.Lock()
	d.processes = slices.DeleteFunc(d.processes, func(p *process) bool { return slices.Contains(victims, p) })
	d.mu.Unlock()
	d.logf("deployment %s: group %s scaled down to %d", d.id, d.topo.Groups[g].Name, len(d.live(g)))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("scale down group %s: %w", d.topo.Groups[g].Name, err)
	}
	return nil
}

// stopReplica drains and stops one replica, and kills it if it has not
// exited within the stop timeout.
func (d *Deployment) stopReplica(ctx context.Context, p *process) error {
	sctx, cancel := context.WithTimeout(ctx, d.stopTimeout)
	defer cancel()
	err := d.controlProcess(p, func(cc hostv1.ControlClient) error {
		_, err := cc.Stop(sctx, &hostv1.StopRequest{})
		return err
	})
	select {
	case <-p.done:
	case <-sctx.Done():
		signalGroup(p, syscall.SIGKILL)
		<-p.done
		return errors.Join(fmt.Errorf("%s: did not stop within %s and was killed (%v)", p.info, d.stopTimeout, err), d.stopSidecarOf(ctx, p), p.removeCgroup())
	}
	// Its sidecar shares its cgroup: stopped first.
	return errors.Join(d.stopSidecarOf(ctx, p), p.removeCgroup())
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
	if err := d.planSidecars(all); err != nil {
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
		d.mesh.configure(hcs[i], i, d.topo.Groups[s.group])
		d.configureResilience(hcs[i])
	}
	for i, s := range all {
		p, err := d.start(hcs[i], s, d.opts)
		if err != nil {
			return fmt.Errorf("deployment %s: start group %s: %w", d.id, d.topo.Groups[s.group].Name, err)
		}
		d.mu.Lock()
		d.processes = append(d.processes, p)
		d.mu.Unlock()
	}
	if err := d.startSidecars(d.opts); err != nil {
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
