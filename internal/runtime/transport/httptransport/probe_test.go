package httptransport_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/httptransport"
)

// TestHealthProbe checks that a GET of the health check, as the kubelet's
// httpGet probe sends it, follows the health server's overall status.
func TestHealthProbe(t *testing.T) {
	s := httptransport.NewServer(transport.ServerOptions{})
	hs := health.NewServer()
	desc := healthpb.Health_ServiceDesc
	desc.Streams = nil // only unary methods on this transport, as a host registers it
	s.RegisterService(&desc, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	url := "http://" + lis.Addr().String() + httptransport.HealthPath
	get := func() (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "SERVING") {
		t.Errorf("serving: %d %s, want 200 SERVING", code, body)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "NOT_SERVING") {
		t.Errorf("not serving: %d %s, want 503 naming NOT_SERVING", code, body)
	}
	// Any other method still takes POST only.
	resp, err := http.Get("http://" + lis.Addr().String() + "/grpc.health.v1.Health/List")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of another method: %d, want 405", resp.StatusCode)
	}
}
