package local

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// ClientIdentity is the component name of the certificate with which the
// deployer and the load generator call a deployment with deploy.mtls: a
// workload of the run like any other, with a name no component can have
// (components are identifiers).
const ClientIdentity = "svclab.client"

// mesh is what a deployment with in-process mesh features keeps: for
// deploy.mtls, the run's CA and each component's credentials, all in the
// deployment's private temp dir, which Stop removes.
type mesh struct {
	caFile string
	certs  map[string]pki.Files
	client *pki.Identity
	// clientFiles hold client's credentials.
	clientFiles pki.Files
}

// newMesh makes the mesh of topology p for deployment id, with its files
// under dir; nil when p turns on no mesh feature that crosses processes.
func newMesh(id, dir string, p *runtime.Topology) (*mesh, error) {
	if !p.Mesh.MTLS || p.InProcess() {
		return nil, nil
	}
	pdir := filepath.Join(dir, "pki")
	if err := os.Mkdir(pdir, 0o700); err != nil {
		return nil, fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	ca, err := pki.NewCA(id)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	m := &mesh{certs: map[string]pki.Files{}}
	for _, g := range p.Groups {
		for _, c := range g.Components {
			f, err := ca.Write(pdir, c)
			if err != nil {
				return nil, fmt.Errorf("deployment %s: mtls: %w", id, err)
			}
			m.certs[c] = f
			m.caFile = f.CA
		}
	}
	f, err := ca.Write(pdir, ClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	m.clientFiles = f
	if m.client, err = pki.Load(f); err != nil {
		return nil, fmt.Errorf("deployment %s: mtls: %w", id, err)
	}
	return m, nil
}

// configure sets hc's mesh for group g.
func (m *mesh) configure(hc *hostv1.HostConfig, g runtime.Group) {
	if m == nil {
		return
	}
	t := &hostv1.Tls{CaFile: m.caFile, Certs: map[string]*hostv1.CertKey{}}
	for _, c := range g.Components {
		f := m.certs[c]
		t.Certs[c] = &hostv1.CertKey{CertFile: f.Cert, KeyFile: f.Key}
	}
	hc.Mesh = &hostv1.Mesh{Tls: t}
}

// clientTLS is how the deployer and the load generator call component:
// nil without mTLS.
func (m *mesh) clientTLS(component string) *tls.Config {
	if m == nil {
		return nil
	}
	return pki.ClientConfig(m.client, component)
}

// ClientFiles are the credentials of ClientIdentity, for tools such as
// curl and openssl s_client to call a deployment with deploy.mtls (false
// without it). They are deleted when the deployment stops.
func (d *Deployment) ClientFiles() (pki.Files, bool) {
	if d.mesh == nil {
		return pki.Files{}, false
	}
	return d.mesh.clientFiles, true
}
