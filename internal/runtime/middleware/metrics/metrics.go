// Package metrics is deploy.metrics's middleware: RED metrics (rate,
// errors, duration) of every call a host serves, per component and method,
// with the Prometheus client library, as a grpc server interceptor so that
// every transport (and inproc) gets them alike. A host serves them on
// /metrics for the run's Prometheus to scrape.
package metrics

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Metric names, the same for every component.
const (
	RequestsName = "svclab_requests_total"
	ErrorsName   = "svclab_request_errors_total"
	DurationName = "svclab_request_duration_seconds"
)

// Buckets of the duration histogram: 50 µs to 10 s, for calls from an
// inproc hop to a large payload across a loaded machine.
var Buckets = prometheus.ExponentialBucketsRange(50e-6, 10, 20)

// Metrics holds one host's metrics.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New makes the metrics of a host running group, with the Go runtime's and
// the process's own beside them.
func New(group string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	constLabels := prometheus.Labels{"group": group}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RequestsName, Help: "Calls served, by component and method.", ConstLabels: constLabels,
	}, []string{"component", "method"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ErrorsName, Help: "Calls served that failed, by component, method and gRPC status code.", ConstLabels: constLabels,
	}, []string{"component", "method", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: DurationName, Help: "Time to serve a call, by component and method.", ConstLabels: constLabels,
		Buckets: Buckets,
	}, []string{"component", "method"})
	m.reg.MustRegister(m.requests, m.errors, m.duration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Server is the interceptor of component's servers.
func (m *Metrics) Server(component string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, "/grpc.health.v1.Health/") {
			return handler(ctx, req) // the deployer's probes are not requests
		}
		method := strings.TrimPrefix(info.FullMethod, "/")
		start := time.Now()
		resp, err := handler(ctx, req)
		m.duration.WithLabelValues(component, method).Observe(time.Since(start).Seconds())
		m.requests.WithLabelValues(component, method).Inc()
		if err != nil {
			m.errors.WithLabelValues(component, method, status.Code(err).String()).Inc()
		}
		return resp, err
	}
}

// Registerer is where other middleware of the host registers its metrics,
// to be served beside these.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Handler serves the metrics in Prometheus's exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
