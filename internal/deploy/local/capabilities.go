package local

import "github.com/svclab/svclab/internal/deploy"

// Capabilities are everything a local deployment can do: it runs the
// autoscalers, the telemetry backends and the fault proxies itself
// (deploy.Deployment).
func (d *Deployment) Capabilities() deploy.Capabilities {
	return deploy.Capabilities{
		Scaling: d, Traces: d, Metrics: d, Telemetry: d,
		Killer: d, HopFaults: d, Mesh: d,
	}
}
