package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/svclab/svclab/internal/deploy/sidecar"
)

// Replicas behind sidecars: a replica added by Scale gets its own sidecar,
// started beside it and health checked with it; the endpoint sets the
// deployer pushes (pushPeers) go to the callers' proxies instead of their
// hosts, which keep calling out through their own sidecar's listeners; a
// replica scaled away takes its sidecar with it. No proxy restarts: each
// kind takes the new endpoints while it runs (sidecar.Live).

// replicaSidecar is the sidecar of a replica being added.
type replicaSidecar struct {
	d  *Deployment
	px sidecar.Proxy
}

// layOutReplicaSidecar lays out the sidecar of the replica whose sockets are
// s, before its host config is made (routeThroughSidecars reads the
// layout). Nil without sidecars.
func (d *Deployment) layOutReplicaSidecar(s *sockets) (*replicaSidecar, error) {
	m := d.sidecars
	if m == nil {
		return nil, nil
	}
	app := func(c string) string { return s.listen[c].GetEndpoint().GetAddr() }
	m.mu.Lock()
	defer m.mu.Unlock()
	px, err := m.AddReplica(d.topo, s.group, s.ordinal, app, d.upstreamsLocked, m.reserve, d.sidecarDir)
	if err != nil {
		return nil, fmt.Errorf("sidecar of %s: %w", d.replicaName(s.group, s.ordinal), err)
	}
	d.mesh.telemetry().TraceProxy(m.Kind, &px.Config)
	return &replicaSidecar{d: d, px: *px}, nil
}

// start starts the sidecar beside host, in its cgroup. Nil r starts
// nothing.
func (r *replicaSidecar) start(host *process) (*process, error) {
	if r == nil {
		return nil, nil
	}
	m := r.d.sidecars
	m.mu.Lock()
	defer m.mu.Unlock()
	return r.d.startProxy(r.px, host, r.d.opts)
}

// dropReplicaSidecars takes the sidecars of group g's replicas from
// ordinal first on, which failed to start, out of the layout and frees the
// ports they held; their processes, if any, were killed with the replicas.
func (d *Deployment) dropReplicaSidecars(g, first int) {
	m := d.sidecars
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for r := first; ; r++ {
		px, ok := m.RemoveReplica(g, r)
		if !ok {
			return
		}
		m.unhold(px.Config)
		delete(m.procs, [2]int{g, r})
		// Its configuration and whatever it wrote at run time go with it.
		if err := os.RemoveAll(px.Config.Dir); err != nil {
			d.logf("deployment %s: sidecar %s: %v", d.id, px.Config.Name, err)
		}
	}
}

// upstreamsLocked are the inbound listeners, on their proxies, of the live
// replicas of the group serving component dep. m.mu is held.
func (d *Deployment) upstreamsLocked(dep string) []string {
	g := d.topo.GroupOf(dep)
	out := []string{}
	for _, p := range d.live(g) {
		if a := d.sidecars.InboundOf(g, p.ordinal, dep); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// pushSidecars points every proxy's way to a component of group g at the
// proxies of g's live replicas, as pushPeers would point the callers'
// hosts at the replicas themselves. Reports false without sidecars.
func (d *Deployment) pushSidecars(g int) (bool, error) {
	m := d.sidecars
	if m == nil {
		return false, nil
	}
	if g < 0 {
		return true, nil // a proxy exited: no one's upstream
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, c := range d.topo.Exposed(g) {
		if err := m.SetUpstreams(c, d.upstreamsLocked(c)); err != nil {
			errs = append(errs, err)
		}
	}
	return true, errors.Join(errs...)
}

// stopSidecarOf stops the sidecar of a replica scaled away, once the
// replica has stopped and before its cgroup, which the sidecar shares, is
// removed: SIGTERM, and SIGKILL after the stop timeout.
func (d *Deployment) stopSidecarOf(ctx context.Context, host *process) error {
	m := d.sidecars
	if m == nil {
		return nil
	}
	key := [2]int{host.group, host.ordinal}
	m.mu.Lock()
	if px, ok := m.RemoveReplica(host.group, host.ordinal); ok {
		m.unhold(px.Config)
	}
	p := m.procs[key]
	delete(m.procs, key)
	m.mu.Unlock()
	if p == nil {
		return nil
	}
	p.retired.Store(true)
	signalGroup(p, syscall.SIGTERM)
	var err error
	sctx, cancel := context.WithTimeout(ctx, d.stopTimeout)
	defer cancel()
	select {
	case <-p.done:
	case <-sctx.Done():
		signalGroup(p, syscall.SIGKILL)
		<-p.done
		err = fmt.Errorf("%s: did not stop within %s and was killed", p.info, d.stopTimeout)
	}
	d.mu.Lock()
	d.processes = slices.DeleteFunc(d.processes, func(q *process) bool { return q == p })
	d.mu.Unlock()
	return errors.Join(err, p.removeCgroup())
}
