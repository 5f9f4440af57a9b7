package runtime

import (
	"crypto/tls"
	"fmt"

	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Mesh are the per-hop features a service mesh adds, which svclab's hosts
// build in-process on every cross-process transport alike (the proxyless
// mesh); the gateway is left as it is.
type Mesh struct {
	// MTLS is deploy.mtls: mutual TLS 1.3 on every cross-process hop, with
	// a certificate authority made for the deployment (internal/pki).
	MTLS bool
	// Tracing is deploy.tracing, the share of requests traced; 0 is off.
	Tracing float64
	// Metrics is deploy.metrics: RED metrics on every component.
	Metrics bool
}

// MeshOf reads the mesh keys of a validated [deploy] table.
func MeshOf(d spec.Deploy) Mesh {
	return Mesh{MTLS: d.MTLS, Tracing: d.Tracing, Metrics: d.Metrics}
}

// meshTLS is a host's mutual TLS: a server configuration per component it
// serves, and the identity its clients present.
type meshTLS struct {
	servers map[string]*tls.Config
	client  *pki.Identity
}

// loadMeshTLS reads the credentials HostConfig.mesh.tls names; nil when
// the host runs without TLS. Every component of the group must have its
// own.
func loadMeshTLS(cfg *hostv1.HostConfig) (*meshTLS, error) {
	t := cfg.GetMesh().GetTls()
	if t == nil {
		return nil, nil
	}
	m := &meshTLS{servers: map[string]*tls.Config{}}
	for _, name := range cfg.GetComponents() {
		ck, ok := t.GetCerts()[name]
		if !ok {
			return nil, fmt.Errorf("mesh.tls: no certificate for component %s", name)
		}
		id, err := pki.Load(pki.Files{Cert: ck.GetCertFile(), Key: ck.GetKeyFile(), CA: t.GetCaFile()})
		if err != nil {
			return nil, fmt.Errorf("mesh.tls: component %s: %w", name, err)
		}
		if id.Run != cfg.GetDeployment() {
			return nil, fmt.Errorf("mesh.tls: component %s's certificate is for deployment %s, not %s", name, id.Run, cfg.GetDeployment())
		}
		m.servers[name] = pki.ServerConfig(id)
		if m.client == nil {
			m.client = id
		}
	}
	return m, nil
}

// serverTLS is the TLS configuration of component's listener, nil without
// TLS.
func (m *meshTLS) serverTLS(component string) *tls.Config {
	if m == nil {
		return nil
	}
	return m.servers[component]
}

// clientTLS is the TLS configuration of calls to peer, nil without TLS.
func (m *meshTLS) clientTLS(peer string) *tls.Config {
	if m == nil || m.client == nil {
		return nil
	}
	return pki.ClientConfig(m.client, peer)
}
