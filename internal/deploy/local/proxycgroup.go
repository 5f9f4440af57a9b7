package local

import (
	"fmt"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/sidecar"
)

// proxyCgroup is the control group a proxy joins, if any, and whether
// the proxy owns it (and removes it when it is gone).
//
// A sidecar joins the group of the host replica it sits beside: with `[deploy.resources]` the two
// share the component's CPU quota and memory limit, as Istio counts the
// sidecar in the pod's limits, so that a component's mesh costs it from
// its own budget; under `experiment.isolation` the group also pins the
// sidecar to the system under test's CPUs. A node proxy serves every
// component and belongs to none: it gets a group of its own with the
// system under test's CPUs and no limit, as a node's ztunnel runs outside
// any pod's.
func (d *Deployment) proxyCgroup(px sidecar.Proxy) (*cgroup.Group, bool, error) {
	if px.Group >= 0 {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, p := range d.processes {
			if p.group == px.Group && p.ordinal == px.Replica && p.info.Role == deploy.RoleHost && p.cg != nil {
				return p.cg, false, nil
			}
		}
		return nil, false, nil
	}
	if d.cpus == "" {
		return nil, false, nil
	}
	m, err := cgroup.Open()
	if err != nil {
		return nil, false, fmt.Errorf("node proxy %s needs a cgroup (cpus %q): %w", px.Config.Name, d.cpus, err)
	}
	g, err := m.New(d.id+"-"+px.Config.Name, cgroup.Limits{CPUs: d.cpus})
	if err != nil {
		return nil, false, err
	}
	return g, true, nil
}
