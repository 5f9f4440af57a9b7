package local

import (
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// configureResilience gives hc deploy.resilience, the client middleware
// of its calls to other groups, with the policies of
// deploy.resilience.groups.
func (d *Deployment) configureResilience(hc *hostv1.HostConfig) {
	r := d.topo.ResilienceProto()
	if r == nil {
		return
	}
	if hc.Mesh == nil {
		hc.Mesh = &hostv1.Mesh{}
	}
	hc.Mesh.Resilience = r
}
