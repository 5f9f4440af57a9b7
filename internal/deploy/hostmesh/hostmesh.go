// Package hostmesh is the mesh of a deployment of svclab hosts on this
// machine: the features its hosts carry in their own processes, as a
// proxyless mesh does. It makes the run's CA and every component's
// credentials for deploy.mtls (which the sidecars carry instead when there
// are any: Credentials), starts the telemetry programs of deploy.tracing
// and deploy.metrics (internal/deploy/telemetry), sets each host's mesh in
// its HostConfig (Configure), and keeps a replica being scaled away in
// Prometheus's targets until its last counters are scraped (Linger,
// LastScrape).
//
// The deployer binds each host's metrics listener, as it binds the host's
// other sockets, and tells Prometheus which replicas to scrape
// (telemetry.SetTargets). A nil *Mesh is a deployment without mesh
// features: its methods do nothing.
package hostmesh

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/procstat"
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

// Config is what the mesh of one deployment needs of it.
type Config struct {
	ID       string // the deployment's, in messages and the CA's name
	Dir      string // the deployment's private directory, which its Stop removes
	Topology *runtime.Topology
	// TelemetryCPUs and CPUs are deploy.Options.TelemetryCPUs and
	// deploy.Options.CPUs (telemetry.Config).
	TelemetryCPUs, CPUs string
	// Spawn runs start on the thread that forks the deployment's children
	// (telemetry.Config.Spawn).
	Spawn func(start func())
	Proc  *procstat.Reader
	// Logf reports what goes wrong and fails nothing.
	Logf func(format string, args ...any)
}

// Mesh is a deployment's mesh features.
type Mesh struct {
	cfg  Config
	mtls bool
	// tel runs Jaeger and Prometheus.
	tel     *telemetry.Telemetry
	metrics bool
	// lingering are the metrics addresses of replicas being scaled away
	// (scrape.go).
	lingering lingering

	// bySidecars: the sidecars carry mTLS, and the hosts talk plaintext
	// to their own sidecar on loopback, as in Istio.
	bySidecars bool

	caFile string
	certs  map[string]pki.Files
	client *pki.Identity
	// clientFiles hold client's credentials.
	clientFiles pki.Files
}

// New makes the mesh of cfg.Topology: credentials for mTLS, a Jaeger for
// tracing (started within ctx). It is nil when the topology turns on no
// mesh feature. On error the mesh returned, if any, holds what started,
// for the caller's Stop (Telemetry().Stop) to clean up.
func New(ctx context.Context, cfg Config) (*Mesh, error) {
	p := cfg.Topology
	m := &Mesh{cfg: cfg, metrics: p.Mesh.Metrics}
	if p.Mesh.Tracing > 0 || p.Mesh.Metrics {
		var err error
		m.tel, err = telemetry.Start(ctx, telemetry.Config{
			ID: cfg.ID, Dir: cfg.Dir, Tracing: p.Mesh.Tracing, JaegerPath: deploy.JaegerPath(),
			CPUs: cfg.TelemetryCPUs, DeploymentCPUs: cfg.CPUs, Spawn: cfg.Spawn, Proc: cfg.Proc,
		})
		if err != nil {
			return m, err
		}
	}
	if p.Mesh.MTLS && !p.InProcess() {
		m.bySidecars = p.Sidecar != "" && p.Sidecar != spec.SidecarNone
		if err := m.makeCredentials(); err != nil {
			return m, err
		}
	}
	if !m.tel.Tracing() && !m.mtls && !m.metrics {
		return nil, nil
	}
	return m, nil
}

// Telemetry is the mesh's telemetry programs, nil without.
func (m *Mesh) Telemetry() *telemetry.Telemetry {
	if m == nil {
		return nil
	}
	return m.tel
}

// Metrics reports whether the hosts serve metrics (deploy.metrics): each
// replica then needs a metrics listener.
func (m *Mesh) Metrics() bool { return m != nil && m.metrics }

// MTLS reports whether the deployment runs with deploy.mtls.
func (m *Mesh) MTLS() bool { return m != nil && m.mtls }

// makeCredentials makes the run's CA and every component's leaf.
func (m *Mesh) makeCredentials() error {
	id := m.cfg.ID
	m.mtls = true
	pdir := filepath.Join(m.cfg.Dir, "pki")
	if err := os.Mkdir(pdir, 0o700); err != nil {
		return fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	ca, err := pki.NewCA(id)
	if err != nil {
		return fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	m.certs = map[string]pki.Files{}
	for _, g := range m.cfg.Topology.Groups {
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

// Credentials are component's mTLS files, which its sidecars present.
func (m *Mesh) Credentials(component string) pki.Files { return m.certs[component] }

// Configure sets hc's mesh for a replica of group g whose metrics listener
// is metricsAt (nil without deploy.metrics).
func (m *Mesh) Configure(hc *hostv1.HostConfig, metricsAt *hostv1.Listener, g runtime.Group) {
	if m == nil {
		return
	}
	hc.Mesh = &hostv1.Mesh{}
	if m.metrics && metricsAt != nil {
		hc.Mesh.Metrics = &hostv1.Metrics{Listener: metricsAt, Buckets: metrics.Buckets}
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

// ClientTLS is how the deployer and the load generator call component:
// nil without mTLS.
func (m *Mesh) ClientTLS(component string) *tls.Config {
	if !m.MTLS() {
		return nil
	}
	return pki.ClientConfig(m.client, component)
}

// ClientFiles are the credentials of ClientIdentity, for tools such as
// curl and openssl s_client to call a deployment with deploy.mtls (false
// without it). They are deleted when the deployment stops.
func (m *Mesh) ClientFiles() (pki.Files, bool) {
	if !m.MTLS() {
		return pki.Files{}, false
	}
	return m.clientFiles, true
}

// Lines say where the mesh features can be seen, for `svclab up`.
func (m *Mesh) Lines() []string {
	if m == nil {
		return nil
	}
	var out []string
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
