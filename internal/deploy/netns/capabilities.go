package netns

import "github.com/svclab/svclab/internal/deploy"

// Capabilities are the local deployment's, whose processes these are (its
// autoscalers, backends and kills act on them as on any local child), with
// this deployment's hop faults, on its own proxies, and its description of
// the machines and links.
func (d *Deployment) Capabilities() deploy.Capabilities {
	own := deploy.Capabilities{HopFaults: d, Describer: d}
	if d.Deployment == nil {
		return own
	}
	return own.Over(d.Deployment.Capabilities())
}

// Capabilities of the network: its machines confine their processes, and the
// load generator sits on a machine of its own.
func (pl *placement) Capabilities() deploy.NetworkCapabilities {
	return deploy.NetworkCapabilities{MachineCgroups: pl, Client: pl}
}
