package local

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/telemetry"
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
// deployment's private temp dir, which Stop removes; for deploy.tracing
// and deploy.metrics, its telemetry programs and the hosts' metrics
// listeners (metrics.go).
type mesh struct {
	mtls bool
	// tel runs Jaeger and Prometheus (internal/deploy/telemetry).
	tel *telemetry.Telemetry

	metrics bool
	// byAddress says whether group g's host binds its own listeners (Java,
	// Python), so that its metrics listener is an address, not a socket.
	byAddress func(g int) bool
	// metricsAt is each group's metrics listener.
	metricsAt []*hostv1.Listener
	// lingering are replicas being scaled away that stay in the scrape
	// targets until their last counters are scraped (metrics.go).
	lingerMu  sync.Mutex
	lingering map[*process]bool

	// bySidecars: the sidecars carry mTLS, and the hosts talk plaintext
	// to their own sidecar on loopback, as in Istio.
	bySidecars bool

	caFile string
	certs  map[string]pki.Files
	client *pki.Identity
	// clientFiles hold client's credentials.
	clientFiles pki.Files
}

// telemetry is the mesh's telemetry programs, nil without.
func (m *mesh) telemetry() *telemetry.Telemetry {
	if m == nil {
		return nil
	}
	return m.tel
}

// newMesh makes the mesh of topology p for deployment d: credentials for
// mTLS, a Jaeger for tracing (started within ctx). Nil when p turns on no
// mesh feature; on error the caller's Stop cleans up.
func (d *Deployment) newMesh(ctx context.Context, p *runtime.Topology) (*mesh, error) {
	m := &mesh{metrics: p.Mesh.Metrics}
	m.byAddress = func(g int) bool { return p.GroupLanguage(g) != runtime.LangGo }
	if p.Mesh.Tracing > 0 || p.Mesh.Metrics {
		var err error
		m.tel, err = telemetry.Start(ctx, telemetry.Config{
			ID: d.id, Dir: d.dir, Tracing: p.Mesh.Tracing, JaegerPath: deploy.JaegerPath(),
			CPUs: d.opts.TelemetryCPUs, DeploymentCPUs: d.cpus, Spawn: d.spawn.do, Proc: d.proc,
		})
		if err != nil {
			return m, err
		}
	}
	if p.Mesh.MTLS && !p.InProcess() {
		m.bySidecars = p.Sidecar != "" && p.Sidecar != spec.SidecarNone
		if err := m.makeCredentials(d.id, d.dir, p); err != nil {
			return m, err
		}
	}
	if !m.tel.Tracing() && !m.mtls && !m.metrics {
		return nil, nil
	}
	return m, nil
}

// meshAfterBind adds a metrics listener to the sockets of each of the
// first replicas and starts the Prometheus that scrapes them (within ctx),
// for deploy.metrics. Replicas added later get theirs from metricsFor, and
// pushPeers points Prometheus at them (metrics.go).
func (d *Deployment) meshAfterBind(ctx context.Context, s []*sockets) error {
	m := d.mesh
	if m == nil || !m.metrics {
		return nil
	}
	if err := m.bindMetrics(s); err != nil {
		return fmt.Errorf("deployment %s: %w", d.id, err)
	}
	var targets []telemetry.Target
	for i, l := range m.metricsAt {
		targets = append(targets, telemetry.Target{Addr: l.GetEndpoint().GetAddr(), Process: d.replicaName(s[i].group, s[i].ordinal)})
	}
	return m.tel.StartMetrics(ctx, targets)
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

// meshReady waits, once every host is ready, until the mesh's telemetry
// sees them: Prometheus has scraped every host.
func (d *Deployment) meshReady(ctx context.Context) error {
	return d.mesh.telemetry().AwaitScraping(ctx)
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
	if otlp, ratio := m.tel.OTLP(); otlp != "" {
		hc.Mesh.Tracing = &hostv1.Tracing{Ratio: ratio, OtlpEndpoint: otlp}
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

// Series returns every sample the deployment's Prometheus scraped (a
// deploy.MetricSource), once the deployment has stopped.
func (d *Deployment) Series() ([]deploy.Sample, error) { return d.mesh.telemetry().Series() }

// Spans returns every span the deployment's Jaeger received (a
// deploy.TraceSource), once the deployment has stopped.
func (d *Deployment) Spans() ([]deploy.Span, error) { return d.mesh.telemetry().Spans() }

// TelemetryProcesses lists the deployment's telemetry programs that are
// running, as processes of role telemetry (a deploy.TelemetrySource).
func (d *Deployment) TelemetryProcesses() []deploy.TelemetryProcess {
	return d.mesh.telemetry().Processes()
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
	return append(out, m.tel.Lines()...)
}
