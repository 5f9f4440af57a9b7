package deploy

// Capabilities are what a Deployment can do beyond the Deployment
// interface, one field per optional interface, nil where it cannot. The
// runner and `svclab up` ask for them through Deployment.Capabilities, as
// net/http's ResponseController asks a ResponseWriter, but explicitly: a
// deployment that wraps another (netns over local) returns its inner
// deployment's capabilities with its own set on top, so that none is lost
// by wrapping, as a type assertion on the wrapper would lose them, and each
// field is checked by the compiler where it is set.
type Capabilities struct {
	// Scaling reports the autoscalers' decisions ([deploy.autoscale]).
	Scaling Autoscaled
	// Traces returns the spans of deploy.tracing, once stopped.
	Traces TraceSource
	// Metrics returns the series of deploy.metrics, once stopped.
	Metrics MetricSource
	// Telemetry lists the telemetry programs, sampled as RoleTelemetry.
	Telemetry TelemetrySource
	// Resources reports samples of processes not on this machine.
	Resources ResourceStreamer
	// Killer ends a process for [deploy.faults.kill].
	Killer Killer
	// HopFaults acts a hop fault of [deploy.faults] out.
	HopFaults HopFaulter
	// Load runs the load generator where the runner's cannot reach.
	Load LoadRunner
	// Mesh says where the mesh features can be seen (Describe).
	Mesh MeshDescriber
	// Describer has more to say in Describe (hosts and links).
	Describer Describer
	// Programs is a deployment of programs that speak their own protocols
	// (the exec app): Describe names them instead of svclab's placement,
	// transport and gateway, which they do not have.
	Programs ProgramLister
}

// Over returns c with every capability it lacks taken from inner: the
// capabilities of a deployment that wraps inner's.
func (c Capabilities) Over(inner Capabilities) Capabilities {
	or(&c.Scaling, inner.Scaling)
	or(&c.Traces, inner.Traces)
	or(&c.Metrics, inner.Metrics)
	or(&c.Telemetry, inner.Telemetry)
	or(&c.Resources, inner.Resources)
	or(&c.Killer, inner.Killer)
	or(&c.HopFaults, inner.HopFaults)
	or(&c.Load, inner.Load)
	or(&c.Mesh, inner.Mesh)
	or(&c.Describer, inner.Describer)
	or(&c.Programs, inner.Programs)
	return c
}

// or sets *v to inner when *v is nil.
func or[T comparable](v *T, inner T) {
	var zero T
	if *v == zero {
		*v = inner
	}
}
