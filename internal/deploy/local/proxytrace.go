package local

import (
	"context"
	"slices"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/sidecar"
)

// traceProxies makes the plan's proxies emit their own spans into the
// deployment's Jaeger under deploy.tracing, with the hosts' ratio, as
// Istio's observability setup has Envoy do. Only a program that can
// (Envoy) does, and only at layer 7: a TCP proxy sees no requests.
func (d *Deployment) traceProxies(plan *sidecar.Plan) {
	for i := range plan.Proxies {
		d.traceProxy(plan.Kind, &plan.Proxies[i].Config)
	}
}

// traceProxy makes one proxy of the plan emit its own spans, if the
// deployment's proxies do; a replica's sidecar added later gets it from
// here too.
func (d *Deployment) traceProxy(k sidecar.Kind, c *sidecar.Config) {
	m := d.mesh
	if m == nil || m.jaeger == nil || k.Name() != "envoy" || c.Protocol == sidecar.TCP {
		return
	}
	c.Tracing = &sidecar.Tracing{OTLP: m.jaeger.otlp, Ratio: m.tracing}
	m.proxies = append(m.proxies, c.Name)
}

// awaitProxySpans lets the proxies export the spans of the last requests
// before they are stopped: Envoy does not flush its spans when it exits,
// and exports what it holds every sidecar.EnvoyFlushInterval.
func (m *mesh) awaitProxySpans(ctx context.Context) {
	if m == nil || len(m.proxies) == 0 {
		return
	}
	t := time.NewTimer(2*sidecar.EnvoyFlushInterval + 100*time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// markProxySpans marks the spans whose service is one of the proxies.
func markProxySpans(spans []deploy.Span, proxies []string) {
	for i := range spans {
		spans[i].Proxy = slices.Contains(proxies, spans[i].Service)
	}
}
