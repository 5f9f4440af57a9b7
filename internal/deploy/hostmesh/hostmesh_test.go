package hostmesh

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

func topology(mtls bool, sidecar, network string) *runtime.Topology {
	return &runtime.Topology{
		Network: network,
		Sidecar: sidecar,
		Mesh:    runtime.Mesh{MTLS: mtls},
		Groups:  []runtime.Group{{Name: "front", Components: []string{"a", "b"}}, {Name: "back", Components: []string{"c"}}},
	}
}

// TestNew: a mesh exists only for a feature that needs one (mTLS across
// processes here; the telemetry programs are tested with the deployer),
// and a nil mesh is asked like any other.
func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name    string
		topo    *runtime.Topology
		want    bool
		hostTLS bool
	}{
		{"nothing", topology(false, "", "tcp"), false, false},
		{"mtls in one process", topology(true, "", ""), false, false},
		{"mtls", topology(true, "", "tcp"), true, true},
		{"mtls by sidecars", topology(true, spec.SidecarEnvoy, "tcp"), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(context.Background(), Config{ID: "t1", Dir: t.TempDir(), Topology: tc.topo})
			if err != nil {
				t.Fatal(err)
			}
			if (m != nil) != tc.want || m.MTLS() != tc.want {
				t.Fatalf("New = %v (mtls %v), want a mesh: %v", m, m.MTLS(), tc.want)
			}
			hc := &hostv1.HostConfig{}
			m.Configure(hc, nil, tc.topo.Groups[0])
			certs := hc.GetMesh().GetTls().GetCerts()
			if got := len(certs) == 2 && certs["a"].GetCertFile() != certs["b"].GetCertFile(); got != tc.hostTLS {
				t.Errorf("the hosts carry mTLS: %v (%v), want %v", got, hc.GetMesh().GetTls(), tc.hostTLS)
			}
			if _, ok := m.ClientFiles(); ok != tc.want {
				t.Errorf("ClientFiles: %v, want %v", ok, tc.want)
			}
			if (m.ClientTLS("a") != nil) != tc.want {
				t.Errorf("ClientTLS: %v, want one: %v", m.ClientTLS("a"), tc.want)
			}
			if !tc.want {
				return
			}
			// A component's certificate names it, for its sidecar or host.
			b, err := os.ReadFile(m.Credentials("c").Cert)
			if err != nil {
				t.Fatal(err)
			}
			blk, _ := pem.Decode(b)
			cert, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if want := pki.ID("t1", "c").String(); len(cert.URIs) != 1 || cert.URIs[0].String() != want {
				t.Errorf("c's certificate names %v, want %s", cert.URIs, want)
			}
		})
	}
}

// TestLastScrapeWithoutMetrics: without deploy.metrics no victim lingers,
// so a scale down neither drains nor waits here (stopping drains).
func TestLastScrapeWithoutMetrics(t *testing.T) {
	m, err := New(context.Background(), Config{ID: "t2", Dir: t.TempDir(), Topology: topology(true, "", "tcp")})
	if err != nil {
		t.Fatal(err)
	}
	drained, released := false, false
	v := []Victim{{Name: "c#1", Metrics: "127.0.0.1:9", Exited: func() bool { return false },
		Drain: func(context.Context) error { drained = true; return nil }}}
	m.Linger(v)
	if m.Lingers("127.0.0.1:9") {
		t.Error("a victim lingers without Prometheus")
	}
	start := time.Now()
	m.LastScrape(context.Background(), v, time.Second, func() { released = true })
	if drained || released || time.Since(start) > 100*time.Millisecond {
		t.Errorf("LastScrape drained %v, released %v, took %s; want nothing done", drained, released, time.Since(start))
	}
}
