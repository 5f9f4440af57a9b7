package deploy

import "time"

// Span is one span a deployment's tracing backend received
// (deploy.tracing): the client or server side of one call.
type Span struct {
	TraceID, SpanID string
	// ParentID is the parent span's id, empty for a trace's root.
	ParentID string
	// Name is the method, "svclab.chain.Hop/Call".
	Name string
	// Kind is "server" or "client".
	Kind string
	// Service is the group whose host made the span.
	Service string
	// Component is the component that served the call (server spans);
	// Peer the component called (client spans).
	Component, Peer string
	Start           time.Time
	Duration        time.Duration
	Error           bool

	// Proxy marks a span a sidecar or node proxy made (Envoy's own, under
	// deploy.tracing), as opposed to a host's; Service is then the proxy.
	Proxy bool
}

// TraceSource is a deployment with deploy.tracing: once stopped (when
// every host has exported its last spans), Spans returns every span its
// Jaeger received.
type TraceSource interface {
	Spans() ([]Span, error)
}

// TelemetrySource is a deployment that runs telemetry programs beside its
// processes (deploy.tracing's Jaeger, deploy.metrics' Prometheus), whose
// resources the runner samples under RoleTelemetry.
type TelemetrySource interface {
	// TelemetryProcesses lists the programs running now.
	TelemetryProcesses() []TelemetryProcess
}

// TelemetryProcess is one telemetry program: which process, and its
// counters.
type TelemetryProcess struct {
	Info   ProcessInfo
	Source ResourceSource
	// URL is where a person opens the program's own UI (Jaeger's,
	// Prometheus's), empty when it has none.
	URL string
}

// Sample is one value of one series a deployment's Prometheus scraped
// (deploy.metrics).
type Sample struct {
	// T is when Prometheus scraped it.
	T time.Time
	// Name is the metric's name; Labels the rest of its labels (instance,
	// job, group, component, method, code, le).
	Name   string
	Labels map[string]string
	Value  float64
}

// MetricSource is a deployment with deploy.metrics: once stopped, Series
// returns every sample its Prometheus scraped of the deployment's series.
type MetricSource interface {
	Series() ([]Sample, error)
}
