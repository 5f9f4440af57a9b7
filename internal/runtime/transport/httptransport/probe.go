package httptransport

import (
	"net/http"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/transport/internal/dispatch"
)

// HealthPath is the route of the standard gRPC health service's Check.
// Besides the POST every method takes, it answers a GET with no body, as
// a probe that cannot POST sends it (the kubelet's httpGet): 200 while
// the server's overall status is SERVING, 503 otherwise.
var HealthPath = "/" + healthpb.Health_ServiceDesc.ServiceName + "/Check"

// serveProbe answers a GET of HealthPath through m, the registered Check,
// with the empty request (the server's overall status).
func (s *Server) serveProbe(w http.ResponseWriter, r *http.Request, m *dispatch.Method) {
	resp, err := m.Handler(m.Impl, r.Context(), func(any) error { return nil }, s.intercept)
	if err != nil {
		writeStatus(w, 0, status.Convert(dispatch.StatusError(err)))
		return
	}
	hr, ok := resp.(*healthpb.HealthCheckResponse)
	if !ok || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		writeStatus(w, http.StatusServiceUnavailable, status.Newf(codes.Unavailable, "http: health %s", hr.GetStatus()))
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	_, _ = w.Write([]byte(`{"status":"SERVING"}`))
}
