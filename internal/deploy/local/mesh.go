package local

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/middleware/metrics"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// ClientIdentity is the component name of the certificate with which the
// deployer and the load generator call a deployment with deploy.mtls: a
// workload of the run like any other, with a name no component can have
// (components are identifiers).
const ClientIdentity = "svclab.client"

// mesh is what a deployment with in-process mesh features keeps: for
// deploy.mtls, the run's CA and each component's credentials, all in the
// deployment's private temp dir, which Stop removes; for deploy.tracing,
// its Jaeger.
type mesh struct {
	mtls    bool
	tracing float64
	jaeger  *jaeger
	// spans are what Jaeger had when the deployment stopped.
	spans    []deploy.Span
	spansErr error
	// collected is closed once spans (and series) are read.
	collected chan struct{}

	metrics bool
	// byAddress says whether group g's host binds its own listeners (Java,
	// Python), so that its metrics listener is an address, not a socket.
	byAddress func(g int) bool
	// metricsAt is each group's metrics listener.
	metricsAt  []*hostv1.Listener
	prometheus *prometheus
	series     []deploy.Sample
	seriesErr  error

	// proxies are the services (proxy names) under which sidecars that
	// emit their own spans report them (proxytrace.go).
	proxies []string

	// bySidecars: the sidecars carry mTLS, and the hosts talk plaintext
	// to their own sidecar on loopback, as in Istio.
	bySidecars bool

	caFile string
	certs  map[string]pki.Files
	client *pki.Identity
	// clientFiles hold client's credentials.
	clientFiles pki.Files
}

// newMesh makes the mesh of topology p for deployment d: credentials for
// mTLS, a Jaeger for tracing (started within ctx). Nil when p turns on no
// mesh feature; on error the caller's Stop cleans up.
func (d *Deployment) newMesh(ctx context.Context, p *runtime.Topology) (*mesh, error) {
	m := &mesh{tracing: p.Mesh.Tracing, metrics: p.Mesh.Metrics, collected: make(chan struct{})}
	m.byAddress = func(g int) bool { return p.GroupLanguage(g) != runtime.LangGo }
	if p.Mesh.Tracing > 0 {
		j, err := d.startJaeger(ctx, deploy.JaegerPath())
		if err != nil {
			return nil, fmt.Errorf("deployment %s: deploy.tracing: %w", d.id, err)
		}
		m.jaeger = j
	}
	if p.Mesh.MTLS && !p.InProcess() {
		m.bySidecars = p.Sidecar != "" && p.Sidecar != spec.SidecarNone
		if err := m.makeCredentials(d.id, d.dir, p); err != nil {
			return m, err
		}
	}
	if m.jaeger == nil && !m.mtls && !m.metrics {
		return nil, nil
	}
	return m, nil
}

// afterBind adds a metrics listener to the sockets of each of the first
// replicas and starts the Prometheus that scrapes them (within ctx), for
// deploy.metrics. Replicas added later get theirs from metricsFor, and
// pushPeers points Prometheus at them (scrapetargets.go).
func (d *Deployment) meshAfterBind(ctx context.Context, s []*sockets) error {
	m := d.mesh
	if m == nil || !m.metrics {
		return nil
	}
	if err := m.bindMetrics(s); err != nil {
		return fmt.Errorf("deployment %s: %w", d.id, err)
	}
	var targets []scrapeTarget
	for i, l := range m.metricsAt {
		targets = append(targets, scrapeTarget{addr: l.GetEndpoint().GetAddr(), process: d.replicaName(s[i].group, s[i].ordinal)})
	}
	p, err := d.startPrometheus(ctx, targets)
	if err != nil {
		return fmt.Errorf("deployment %s: deploy.metrics: %w", d.id, err)
	}
	m.prometheus = p
	return nil
}

// makeCredentials makes the run's CA and every component's leaf.
func (m *mesh) makeCredentials(id, dir string, p *runtime.Topology) error {
	m.mtls = true
	pdir := filepath.Join(dir, "pki")
	if err := os.Mkdir(pdir, 0o700); err != nil {
		return fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	ca, err := pki.NewCA(id)
	if err != nil {
		return fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	m.certs = map[string]pki.Files{}
	for _, g := range p.Groups {
		for _, c := range g.Components {
			f, err := ca.Write(pdir, c)
			if err != nil {
				return fmt.Errorf("deployment %s: mtls: %w", id, err)
			}
			m.certs[c] = f
			m.caFile = f.CA
		}
	}
	f, err := ca.Write(pdir, ClientIdentity)
	if err != nil {
		return fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	m.clientFiles = f
	if m.client, err = pki.Load(f); err != nil {
		return fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	return nil
}

// meshReady waits, once every host is ready, until the mesh's backends
// see them: Prometheus has scraped every host.
func (d *Deployment) meshReady(ctx context.Context) error {
	if d.mesh == nil || d.mesh.prometheus == nil {
		return nil
	}
	if err := d.mesh.prometheus.scraping(ctx); err != nil {
		return fmt.Errorf("deployment %s: deploy.metrics: %w", d.id, err)
	}
	return nil
}

// configure sets hc's mesh for a replica of group g, the i-th of the
// first replicas (whose metrics listener it gets), or -1 for one added
// later.
func (m *mesh) configure(hc *hostv1.HostConfig, i int, g runtime.Group) {
	if m == nil {
		return
	}
	hc.Mesh = &hostv1.Mesh{}
	if m.metrics && i >= 0 && i < len(m.metricsAt) {
		hc.Mesh.Metrics = &hostv1.Metrics{Listener: m.metricsAt[i], Buckets: metrics.Buckets}
	}
	if m.jaeger != nil {
		hc.Mesh.Tracing = &hostv1.Tracing{Ratio: m.tracing, OtlpEndpoint: m.jaeger.otlp}
	}
	if !m.mtls || m.bySidecars {
		return
	}
	t := &hostv1.Tls{CaFile: m.caFile, Certs: map[string]*hostv1.CertKey{}}
	for _, c := range g.Components {
		f := m.certs[c]
		t.Certs[c] = &hostv1.CertKey{CertFile: f.Cert, KeyFile: f.Key}
	}
	hc.Mesh.Tls = t
}

// clientTLS is how the deployer and the load generator call component:
// nil without mTLS.
func (m *mesh) clientTLS(component string) *tls.Config {
	if m == nil || !m.mtls {
		return nil
	}
	return pki.ClientConfig(m.client, component)
}

// ClientFiles are the credentials of ClientIdentity, for tools such as
// curl and openssl s_client to call a deployment with deploy.mtls (false
// without it). They are deleted when the deployment stops.
func (d *Deployment) ClientFiles() (pki.Files, bool) {
	if d.mesh == nil || !d.mesh.mtls {
		return pki.Files{}, false
	}
	return d.mesh.clientFiles, true
}

// beforeStop lets the backends catch up with the hosts' last calls.
func (m *mesh) beforeStop(ctx context.Context) {
	if m != nil && m.prometheus != nil {
		m.prometheus.finalScrape(ctx)
	}
	m.awaitProxySpans(ctx)
}

// collectSpans reads what Jaeger received, once every host has stopped
// (and so exported its last spans), then stops Jaeger.
func (m *mesh) collectSpans(ctx context.Context, groups []runtime.Group) {
	if m == nil {
		return
	}
	defer close(m.collected)
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if m.prometheus != nil {
		m.series, m.seriesErr = m.prometheus.series(qctx)
		m.prometheus.stop()
	}
	if m.jaeger != nil {
		var services []string
		for _, g := range groups {
			services = append(services, g.Name)
		}
		m.spans, m.spansErr = m.jaeger.settledSpans(qctx, append(services, m.proxies...))
		markProxySpans(m.spans, m.proxies)
		m.jaeger.stop()
	}
}

// Series returns every sample the deployment's Prometheus scraped (a
// deploy.MetricSource), once the deployment has stopped.
func (d *Deployment) Series() ([]deploy.Sample, error) {
	if d.mesh == nil || d.mesh.prometheus == nil {
		return nil, errNoMetrics
	}
	select {
	case <-d.mesh.collected:
	default:
		return nil, fmt.Errorf("deployment %s: series are read when it has stopped", d.id)
	}
	return d.mesh.series, d.mesh.seriesErr
}

// Spans returns every span the deployment's Jaeger received (a
// deploy.TraceSource), once the deployment has stopped.
func (d *Deployment) Spans() ([]deploy.Span, error) {
	if d.mesh == nil || d.mesh.jaeger == nil {
		return nil, errNoTracing
	}
	select {
	case <-d.mesh.collected:
	default:
		return nil, fmt.Errorf("deployment %s: spans are read when it has stopped", d.id)
	}
	return d.mesh.spans, d.mesh.spansErr
}

// MeshLines says where the mesh features of the deployment can be seen, for
// `svclab up` (a deploy.MeshDescriber).
func (d *Deployment) MeshLines() []string {
	var out []string
	if d.sidecars != nil {
		out = append(out, fmt.Sprintf("proxies: the entry above is %s's proxy, as the load generator calls it; the gateway calls %s in its own process, past its proxy", d.topo.Entry, d.topo.Entry))
	}
	m := d.mesh
	if m == nil {
		return out
	}
	if m.mtls {
		f := m.clientFiles
		where := "every listener but the gateway"
		if m.bySidecars {
			where = "between the proxies and at the entry (each app is plaintext to its own proxy on loopback)"
		}
		out = append(out, fmt.Sprintf("mtls:    %s; a client certificate: --cacert %s --cert %s --key %s", where, f.CA, f.Cert, f.Key))
	}
	if m.jaeger != nil {
		out = append(out, fmt.Sprintf("tracing: %g%% of requests, Jaeger UI at %s", 100*m.tracing, m.jaeger.query))
	}
	if m.prometheus != nil {
		out = append(out, fmt.Sprintf("metrics: Prometheus at %s (svclab_requests_total, svclab_request_duration_seconds, ...)", m.prometheus.web))
	}
	return out
}
