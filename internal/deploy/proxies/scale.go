package proxies

import (
	"errors"
	"fmt"
	"os"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy/sidecar"
)

// Replicas behind sidecars: a replica added by the deployer's Scale gets
// its own sidecar, started beside it and health checked with it; the
// endpoint sets the deployer pushes go to the callers' proxies instead of
// their hosts (SetUpstreams), which keep calling out through their own
// sidecar's listeners; a replica scaled away takes its sidecar with it
// (Remove). No proxy restarts: each kind takes the new endpoints while it
// runs (sidecar.Live).

// Pending is the sidecar of a replica being added, laid out but not
// started.
type Pending[P any] struct {
	m  *Proxies[P]
	px sidecar.Proxy
}

// AddReplica lays out the sidecar of replica r of group g, whose
// component c listens at app(c), before its host config is made (Route
// reads the layout). name names the replica in errors. Nil without
// proxies.
func (m *Proxies[P]) AddReplica(g, r int, name string, app func(c string) string) (*Pending[P], error) {
	if m == nil {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	px, err := m.layout.AddReplica(m.cfg.Topology, g, r, app, m.upstreamsLocked, m.reserve, m.dir)
	if err != nil {
		return nil, fmt.Errorf("sidecar of %s: %w", name, err)
	}
	m.cfg.Trace(m.layout.Kind, &px.Config)
	return &Pending[P]{m: m, px: *px}, nil
}

// Start starts the sidecar beside its host, in the host's cgroup hostCg
// (nil if it has none): the host, started later than the others, is not
// yet among the processes Config.HostCgroup looks through. A nil p starts
// nothing and returns P's zero.
func (p *Pending[P]) Start(hostCg *cgroup.Group) (P, error) {
	if p == nil {
		var zero P
		return zero, nil
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	return p.m.start(p.px, func(sidecar.Proxy) (*cgroup.Group, bool, error) { return hostCg, false, nil })
}

// DropReplicas takes the sidecars of group g's replicas from ordinal
// first on, which failed to start, out of the layout and frees the ports
// they held; their processes, if any, the deployer killed with the
// replicas.
func (m *Proxies[P]) DropReplicas(g, first int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for r := first; ; r++ {
		px, ok := m.layout.RemoveReplica(g, r)
		if !ok {
			return
		}
		m.unhold(px.Config)
		delete(m.procs, [2]int{g, r})
		// Its configuration and whatever it wrote at run time go with it.
		if err := os.RemoveAll(px.Config.Dir); err != nil {
			m.cfg.Logf("deployment %s: sidecar %s: %v", m.cfg.ID, px.Config.Name, err)
		}
	}
}

// Remove takes the sidecar of replica r of group g, which is being scaled
// away, out of the layout and returns its process for the deployer to
// stop (false if it has none).
func (m *Proxies[P]) Remove(g, r int) (P, bool) {
	var zero P
	if m == nil {
		return zero, false
	}
	key := [2]int{g, r}
	m.mu.Lock()
	defer m.mu.Unlock()
	if px, ok := m.layout.RemoveReplica(g, r); ok {
		m.unhold(px.Config)
	}
	p, ok := m.procs[key]
	delete(m.procs, key)
	return p, ok
}

// upstreamsLocked are the inbound listeners, on their proxies, of the live
// replicas of the group serving component dep. m.mu is held.
func (m *Proxies[P]) upstreamsLocked(dep string) []string {
	g := m.cfg.Topology.GroupOf(dep)
	out := []string{}
	for _, r := range m.cfg.Live(g) {
		if a := m.layout.InboundOf(g, r, dep); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// SetUpstreams points every proxy's way to a component of group g at the
// proxies of g's live replicas, as the deployer would point the callers'
// hosts at the replicas themselves. Reports false without proxies, when
// the hosts are to be told instead.
func (m *Proxies[P]) SetUpstreams(g int) (bool, error) {
	if m == nil {
		return false, nil
	}
	if g < 0 {
		return true, nil // a proxy exited: no one's upstream
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, c := range m.cfg.Topology.Exposed(g) {
		if err := m.layout.SetUpstreams(c, m.upstreamsLocked(c)); err != nil {
			errs = append(errs, err)
		}
	}
	return true, errors.Join(errs...)
}
