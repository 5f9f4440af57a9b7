package runtime

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime/middleware/metrics"
	"github.com/svclab/svclab/internal/runtime/middleware/resilience"
	"github.com/svclab/svclab/internal/runtime/middleware/tracing"
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
	// Resilience is deploy.resilience: retries, timeouts and a breaker on
	// every call to another group.
	Resilience spec.Resilience
}

// Keys are the spec keys of the features m turns on, of those a host
// builds in: deploy.mtls, deploy.tracing, deploy.metrics, in that order.
func (m Mesh) Keys() []string {
	var keys []string
	for _, f := range []struct {
		key string
		on  bool
	}{{"deploy.mtls", m.MTLS}, {"deploy.tracing", m.Tracing > 0}, {"deploy.metrics", m.Metrics}} {
		if f.on {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// MeshOf reads the mesh keys of a validated [deploy] table.
func MeshOf(d spec.Deploy) Mesh {
	return Mesh{MTLS: d.MTLS, Tracing: d.Tracing, Metrics: d.Metrics, Resilience: d.Resilience}
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

// meshInterceptors are the per-hop middleware HostConfig.mesh asks for,
// which name the component a server serves or a client calls.
type meshInterceptors struct {
	tracer  *tracing.Tracer  // nil without deploy.tracing
	metrics *metrics.Metrics // nil without deploy.metrics
	// resilience wraps calls to other groups; nil without
	// deploy.resilience.
	resilience *resilience.Resilience
	// metricsSrv serves metrics on HostConfig.mesh.metrics.listener.
	metricsSrv *http.Server
}

func newMeshInterceptors(ctx context.Context, cfg *hostv1.HostConfig) (*meshInterceptors, error) {
	m := &meshInterceptors{}
	if mc := cfg.GetMesh().GetMetrics(); mc != nil {
		lis, err := listen(mc.GetListener())
		if err != nil {
			return nil, fmt.Errorf("mesh.metrics: %w", err)
		}
		m.metrics = metrics.New(cfg.GetGroup())
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.metrics.Handler())
		m.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := m.metricsSrv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Printf("group %s: metrics on %s: %v", cfg.GetGroup(), lis.Addr(), err)
			}
		}()
	}
	if t := cfg.GetMesh().GetTracing(); t != nil {
		opts := tracing.Options{
			Service:    cfg.GetGroup(),
			Deployment: cfg.GetDeployment(),
			Ratio:      t.GetRatio(),
			Endpoint:   t.GetOtlpEndpoint(),
		}
		if err := tracing.ExportFromEnv(&opts, os.Getenv(tracing.ExportEnv)); err != nil {
			return nil, fmt.Errorf("mesh.tracing: %w", err)
		}
		tr, err := tracing.New(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("mesh.tracing: %w", err)
		}
		m.tracer = tr
	}
	if r := cfg.GetMesh().GetResilience(); r != nil {
		o, err := resilienceOptions(r)
		if err != nil {
			return nil, err
		}
		m.resilience = resilience.New(cfg.GetGroup(), o)
		if m.metrics != nil {
			if err := m.resilience.Register(m.metrics.Registerer()); err != nil {
				return nil, fmt.Errorf("mesh.resilience: metrics: %w", err)
			}
		}
	}
	return m, nil
}

// server are the interceptors of component's servers, after the host's own.
func (m *meshInterceptors) server(own []grpc.UnaryServerInterceptor, component string) []grpc.UnaryServerInterceptor {
	out := append([]grpc.UnaryServerInterceptor{}, own...)
	if m.metrics != nil {
		out = append(out, m.metrics.Server(component))
	}
	if m.tracer != nil {
		out = append(out, m.tracer.Server(component))
	}
	return out
}

// client are the interceptors of calls to peer, after the host's own.
func (m *meshInterceptors) client(own []grpc.UnaryClientInterceptor, peer string) []grpc.UnaryClientInterceptor {
	if m.tracer == nil {
		return own
	}
	return append(append([]grpc.UnaryClientInterceptor{}, own...), m.tracer.Client(peer))
}

// peerClient are the interceptors of calls to peer in another group: the
// resilience middleware outside the tracer, so that every attempt is a
// span of its own, as Envoy traces each try.
func (m *meshInterceptors) peerClient(own []grpc.UnaryClientInterceptor, peer string) []grpc.UnaryClientInterceptor {
	if m.resilience == nil {
		return m.client(own, peer)
	}
	return m.client(append(append([]grpc.UnaryClientInterceptor{}, own...), m.resilience.Client(peer)), peer)
}

// flushTimeout bounds how long a stopping host tries to export its last
// spans; what does not make it is counted as dropped after the run.
const flushTimeout = 5 * time.Second

// close exports the spans still batched and stops serving metrics.
func (m *meshInterceptors) close() error {
	var errs []error
	if m.metricsSrv != nil {
		errs = append(errs, m.metricsSrv.Close())
	}
	if m.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		errs = append(errs, m.tracer.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
