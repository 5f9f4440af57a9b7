package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Scaling a group while it runs: Scale, which the autoscalers call
// (autoscale.go, internal/deploy/autoscaler). A replica added
// is started as the first ones are (sockets, HostConfig, its sidecar and
// metrics listener, readiness), and one removed is taken out of its
// callers' endpoint sets (pushPeers, replicas.go), scraped a last time
// (mesh.go, internal/deploy/hostmesh) and drained before it stops. These steps are the process
// starter's own, so scaling stays in this package, bounded by this file,
// replicas.go (the endpoint sets), proxies.go (internal/deploy/proxies:
// a replica's sidecar) and gatewayfront.go
// (what a replicated entry needs in front of it).

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
	if err := d.sidecars.Scalable(group); err != nil {
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
			d.sidecars.DropReplicas(g, first)
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
		app := func(c string) string { return s.listen[c].GetEndpoint().GetAddr() }
		sc, err := d.sidecars.AddReplica(g, ordinal, d.replicaName(g, ordinal), app)
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
		if err := d.bindMetrics(s); err != nil {
			s.close()
			return err
		}
		d.mesh.Configure(hc, s.metrics, d.topo.Groups[g])
		d.configureResilience(hc)
		p, err := d.start(hc, s)
		s.close()
		if err != nil {
			return err
		}
		started = append(started, p)
		px, err := sc.Start(p.cg)
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
// timeout allows) and exits. A caller answers the new set once the calls
// it had already given a victim have finished (balancer.Update), not only
// once it picks no victim: a call picked just before, still on its way,
// would otherwise reach a victim that refuses it.
func (d *Deployment) scaleDown(ctx context.Context, g int, victims []*process) error {
	for _, p := range victims {
		p.retired.Store(true)
	}
	d.mesh.Linger(d.victims(victims))
	var errs []error
	if err := d.pushPeers(ctx, g); err != nil {
		// A caller that still sends to a victim finds it draining
		// (UNAVAILABLE) and its health check takes it out.
		errs = append(errs, err)
	}
	d.lastScrape(ctx, victims)
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
