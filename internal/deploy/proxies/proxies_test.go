package proxies

import (
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// TestWithoutProxies: a topology without deploy.sidecar lays out nothing,
// and the nil Proxies the deployer then holds leaves everything as it is,
// so the deployer calls it unconditionally.
func TestWithoutProxies(t *testing.T) {
	for _, sc := range []string{"", spec.SidecarNone} {
		cfg := Config[*int]{Topology: &runtime.Topology{Sidecar: sc}}
		called := false
		m, err := New(cfg, func(int, string) []string { called = true; return nil })
		if err != nil || m != nil || called {
			t.Fatalf("sidecar %q: New = %v, %v (layout asked: %v), want nil, nil", sc, m, err, called)
		}
		hc := &hostv1.HostConfig{Peers: map[string]*hostv1.EndpointSet{"b": {}}}
		m.Route(hc, 0, 0)
		if len(hc.Peers) != 1 || len(hc.Peers["b"].GetEndpoints()) != 0 {
			t.Errorf("sidecar %q: Route changed the peers: %v", sc, hc.Peers)
		}
		if ok, err := m.SetUpstreams(0); ok || err != nil {
			t.Errorf("sidecar %q: SetUpstreams = %v, %v, want false: the hosts are told", sc, ok, err)
		}
		if err := m.Scalable("a"); err != nil {
			t.Errorf("sidecar %q: Scalable = %v", sc, err)
		}
		if got := m.Entries(transport.DialOptions{}); got != nil {
			t.Errorf("sidecar %q: Entries = %v, want nil (the replicas themselves)", sc, got)
		}
		if p, ok := m.Remove(0, 0); ok || p != nil {
			t.Errorf("sidecar %q: Remove = %v, %v", sc, p, ok)
		}
		pend, err := m.AddReplica(0, 1, "a#1", nil)
		if err != nil || pend != nil {
			t.Fatalf("sidecar %q: AddReplica = %v, %v", sc, pend, err)
		}
		if p, err := pend.Start(nil); p != nil || err != nil {
			t.Errorf("sidecar %q: Start = %v, %v", sc, p, err)
		}
		started, err := m.StartAll()
		if started != nil || err != nil {
			t.Errorf("sidecar %q: StartAll = %v, %v", sc, started, err)
		}
		m.DropReplicas(0, 0)
		m.Release()
	}
}
