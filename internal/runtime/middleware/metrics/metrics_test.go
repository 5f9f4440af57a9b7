package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/middleware/metrics"
)

// TestRED calls the interceptor as a server would and reads what /metrics
// serves: every call counted, failures by code, durations in the
// histogram, health checks left out.
func TestRED(t *testing.T) {
	m := metrics.New("g1")
	intercept := m.Server("cart")
	ok := func(context.Context, any) (any, error) { return "ok", nil }
	bad := func(context.Context, any) (any, error) { return nil, status.Error(codes.NotFound, "no") }
	call := func(method string, h grpc.UnaryHandler) {
		_, _ = intercept(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method}, h)
	}
	for range 3 {
		call("/shop.Cart/Add", ok)
	}
	call("/shop.Cart/Add", bad)
	call("/grpc.health.v1.Health/Check", ok)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	out := string(b)
	for _, want := range []string{
		`svclab_requests_total{component="cart",group="g1",method="shop.Cart/Add"} 4`,
		`svclab_request_errors_total{code="NotFound",component="cart",group="g1",method="shop.Cart/Add"} 1`,
		`svclab_request_duration_seconds_count{component="cart",group="g1",method="shop.Cart/Add"} 4`,
		`process_cpu_seconds_total`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(out, "Health") {
		t.Error("a health check was counted")
	}
}
