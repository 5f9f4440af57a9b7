package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/runtime/inflight"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Middleware are the interceptors a host puts on every server it runs and
// every client it dials, inproc included, besides those of the mesh
// features its HostConfig asks for (mesh.go: TLS, tracing, metrics), which
// the host adds itself after these.
type Middleware struct {
	Server []grpc.UnaryServerInterceptor
	Client []grpc.UnaryClientInterceptor
}

// RunHost runs one group until ctx ends or its deployer stops it over the
// control channel: it builds the group's components, serves each one called
// from outside the group on its listener (with the gRPC health service
// beside it), serves the gateway and the control service when asked, writes
// ReadyMarker to the log, and at the end stops every server and returns nil.
// A component that fails to build is an error naming it.
func RunHost(ctx context.Context, cfg *hostv1.HostConfig, mw Middleware) error {
	h, err := newHost(ctx, cfg, mw)
	if err != nil {
		return fmt.Errorf("group %s: %w", cfg.GetGroup(), err)
	}
	return h.run(ctx)
}

type host struct {
	cfg     *hostv1.HostConfig
	servers []served
	// peers holds a balancer per component of another group this group
	// calls; the control service updates their endpoint sets.
	peers map[string]*balancer.Balancer
	dopts transport.DialOptions
	// tls is the host's mutual TLS, nil without deploy.mtls.
	tls *meshTLS
	// mesh adds the interceptors of deploy.tracing (mesh.go).
	mesh *meshInterceptors
	// calls counts the calls in flight on the listeners and gateway, so
	// that a drain knows when the host is idle.
	calls  inflight.Gate
	served atomic.Int64 // calls admitted, for the exit log line
	health *health.Server
	ctl    *control
	// stop ends run; set by run before anything can call it.
	stop context.CancelCauseFunc
}

type served struct {
	what string
	srv  transport.Server
	lis  net.Listener
}

func newHost(ctx context.Context, cfg *hostv1.HostConfig, mw Middleware) (*host, error) {
	app, err := Lookup(cfg.GetApp())
	if err != nil {
		return nil, err
	}
	conf := app.NewConfig()
	dec := json.NewDecoder(bytes.NewReader([]byte(cfg.GetConfigJson())))
	dec.DisallowUnknownFields()
	if err := dec.Decode(conf); err != nil {
		return nil, fmt.Errorf("decode %s config: %w", cfg.GetApp(), err)
	}
	if err := conf.Validate(); err != nil {
		return nil, fmt.Errorf("%s config: %w", cfg.GetApp(), err)
	}
	comps := map[string]Component{}
	for _, c := range conf.Components() {
		comps[c.Name] = c
	}
	for _, name := range cfg.GetComponents() {
		if _, ok := comps[name]; !ok {
			return nil, fmt.Errorf("app %s has no component %q", cfg.GetApp(), name)
		}
	}
	sopts := transport.ServerOptions{
		Interceptors: mw.Server,
		Codec:        cfg.GetTransportOptions().GetHttpCodec(),
		HTTPLimits:   HTTPLimitsOf(cfg.GetTransportOptions().GetHttpLimits()),
	}
	mtls, err := loadMeshTLS(cfg)
	if err != nil {
		return nil, err
	}
	mi, err := newMeshInterceptors(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h := &host{
		cfg:   cfg,
		tls:   mtls,
		mesh:  mi,
		peers: map[string]*balancer.Balancer{},
		dopts: transport.DialOptions{
			Interceptors: mw.Client,
			Codec:        cfg.GetTransportOptions().GetHttpCodec(),
			// Every host of a deployment has the same limits: half the
			// peers' idle timeout leaves room for the two clocks' start.
			IdleTimeout: HTTPLimitsOf(cfg.GetTransportOptions().GetHttpLimits()).IdleTimeout / 2,
		},
		health: health.NewServer(),
	}
	picker, err := pickerOf(cfg.GetTransportOptions().GetBalancer())
	if err != nil {
		return nil, err
	}
	// One channel per component, because several components of a group may
	// implement the same service (chain's hops), and a channel holds one
	// implementation per service.
	channels := map[string]*inproc.Channel{}
	for _, name := range cfg.GetComponents() {
		cs, cd := sopts, h.dopts
		cs.Interceptors = mi.server(sopts.Interceptors, name)
		cd.Interceptors = mi.client(h.dopts.Interceptors, name)
		channels[name] = inproc.New(cs, cd)
	}
	conn := func(dep string) (grpc.ClientConnInterface, error) {
		if ch, ok := channels[dep]; ok {
			return ch, nil
		}
		if b, ok := h.peers[dep]; ok {
			return b, nil
		}
		set, ok := cfg.GetPeers()[dep]
		if !ok {
			return nil, fmt.Errorf("no endpoints for component %s, which is outside group %s", dep, cfg.GetGroup())
		}
		addrs, err := h.addresses(dep, set)
		if err != nil {
			return nil, fmt.Errorf("peer %s: %w", dep, err)
		}
		b := balancer.New(dep, balancer.Options{Picker: picker})
		if err := b.Update(addrs); err != nil {
			return nil, err
		}
		h.peers[dep] = b
		return b, nil
	}

	failing := os.Getenv(FailComponentEnv)
	impls := map[string]any{}
	for _, name := range cfg.GetComponents() {
		c := comps[name]
		deps := Deps{}
		for _, d := range c.Deps {
			cc, err := conn(d)
			if err != nil {
				h.close()
				return nil, fmt.Errorf("component %s: %w", name, err)
			}
			deps[d] = cc
		}
		if name == failing {
			h.close()
			return nil, fmt.Errorf("component %s: failing at start because %s=%s (a test knob)", name, FailComponentEnv, failing)
		}
		impl, err := c.New(ctx, deps)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("component %s: %w", name, err)
		}
		channels[name].RegisterService(c.Service, impl)
		impls[name] = impl
	}

	// Calls that arrive over a listener pass the drain gate; calls inside
	// the group do not, as they are part of calls already admitted.
	lopts := sopts
	lopts.Interceptors = append([]grpc.UnaryServerInterceptor{h.admit}, sopts.Interceptors...)
	if cfg.GetTransport() == inproc.Name && len(cfg.GetListeners()) > 0 {
		h.close()
		return nil, fmt.Errorf("transport %s cannot listen, but components %v have listeners", inproc.Name, slices.Sorted(maps.Keys(cfg.GetListeners())))
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.GetListeners())) {
		c, ok := comps[name]
		if !ok || !slices.Contains(cfg.GetComponents(), name) {
			h.close()
			return nil, fmt.Errorf("listener for component %s, which is not in group %s", name, cfg.GetGroup())
		}
		opts := lopts
		opts.TLS = h.tls.serverTLS(name)
		opts.Interceptors = mi.server(lopts.Interceptors, name)
		if err := h.serve(opts, name, cfg.GetListeners()[name], c, impls[name]); err != nil {
			h.close()
			return nil, err
		}
	}
	if gw := cfg.GetGateway(); gw != nil {
		c, ok := comps[cfg.GetEntry()]
		if !ok || !slices.Contains(cfg.GetComponents(), cfg.GetEntry()) {
			h.close()
			return nil, fmt.Errorf("gateway for entry %s, which is not in group %s", cfg.GetEntry(), cfg.GetGroup())
		}
		gopts := lopts
		gopts.Interceptors = mi.server(lopts.Interceptors, cfg.GetEntry())
		gopts.Web = h.web(impls[cfg.GetEntry()], gopts.Interceptors, cfg.GetEntry())
		if err := h.serve(gopts, "gateway", gw, c, impls[cfg.GetEntry()]); err != nil {
			h.close()
			return nil, err
		}
	}
	if l := cfg.GetControl(); l != nil {
		if h.ctl, err = newControl(h, l); err != nil {
			h.close()
			return nil, err
		}
	}
	return h, nil
}

// addresses turns peer's endpoint set into the addresses a balancer dials,
// checking every endpoint's transport first.
func (h *host) addresses(peer string, set *hostv1.EndpointSet) ([]balancer.Address, error) {
	dopts := h.dopts
	dopts.TLS = h.tls.clientTLS(peer)
	dopts.Interceptors = h.mesh.peerClient(h.dopts.Interceptors, peer)
	var addrs []balancer.Address
	for _, pe := range set.GetEndpoints() {
		ep := EndpointOf(pe)
		if ep.Transport == inproc.Name {
			return nil, fmt.Errorf("endpoint %s: transport %s cannot cross processes", ep, inproc.Name)
		}
		tr, err := transport.Lookup(ep.Transport)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", ep, err)
		}
		addrs = append(addrs, balancer.Address{
			Addr: ep.String(),
			Dial: func(ctx context.Context) (transport.Conn, error) {
				return tr.Dial(ctx, ep.Network, ep.Addr, dopts)
			},
		})
	}
	if err := balancer.Check(addrs); err != nil {
		return nil, err
	}
	return addrs, nil
}

// serve registers the component and the health service on a new server of
// the listener's transport. Serving starts in run.
func (h *host) serve(opts transport.ServerOptions, what string, l *hostv1.Listener, c Component, impl any) error {
	tr, err := transport.Lookup(l.GetEndpoint().GetTransport())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	lis, err := listen(l)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	srv := tr.NewServer(opts)
	srv.RegisterService(c.Service, impl)
	registerHealth(srv, h.health)
	h.servers = append(h.servers, served{what: what + " on " + servedAt(l, lis).String(), srv: srv, lis: lis})
	return nil
}

// servedAt is the listener's own address, as its endpoint may have asked
// for port 0.
func servedAt(l *hostv1.Listener, lis net.Listener) Endpoint {
	return Endpoint{Transport: l.GetEndpoint().GetTransport(), Network: lis.Addr().Network(), Addr: lis.Addr().String()}
}

// healthMethods is the prefix of the health service's methods, which a
// draining host still answers (NOT_SERVING).
var healthMethods = "/" + healthpb.Health_ServiceDesc.ServiceName + "/"

// admit lets a call in through the drain gate, and counts it while it runs.
func (h *host) admit(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, healthMethods) {
		return handler(ctx, req)
	}
	if !h.calls.Enter() {
		return nil, status.Errorf(codes.Unavailable, "group %s is draining", h.cfg.GetGroup())
	}
	defer h.calls.Leave()
	h.served.Add(1)
	return handler(ctx, req)
}

// drain refuses new calls on the listeners; Done of h.calls tells when the
// last one in flight has finished.
func (h *host) drain() {
	if !h.calls.Closed() {
		log.Printf("group %s: draining: new calls refused, %d in flight", h.cfg.GetGroup(), h.calls.InFlight())
	}
	h.calls.Close()
	h.health.Shutdown()
}

// registerHealth adds the standard gRPC health service. Its streaming Watch
// method is left out because only the grpc transport carries streams; Check
// (and List) are unary.
func registerHealth(srv grpc.ServiceRegistrar, hs *health.Server) {
	desc := healthpb.Health_ServiceDesc
	desc.Streams = nil
	srv.RegisterService(&desc, hs)
}

// listen returns l's listener: the inherited socket, or a new one.
func listen(l *hostv1.Listener) (net.Listener, error) {
	ep := EndpointOf(l.GetEndpoint())
	if fd := l.GetFd(); fd > 2 {
		f := os.NewFile(uintptr(fd), ep.Addr)
		if f == nil {
			return nil, fmt.Errorf("inherited listener fd %d for %s is not open", fd, ep.Addr)
		}
		defer f.Close() // FileListener dups it
		lis, err := net.FileListener(f)
		if err != nil {
			return nil, fmt.Errorf("inherited listener fd %d for %s: %w", fd, ep.Addr, err)
		}
		return lis, nil
	}
	lis, err := net.Listen(ep.Network, ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", ep, err)
	}
	return lis, nil
}

// ServedMarker precedes, in a host's last log line, the number of calls it
// admitted on its listeners and gateway: how a test sees the share of
// calls each replica got.
const ServedMarker = "served, on its listeners,"

// errStopped ends a host its deployer stopped over the control channel.
var errStopped = errors.New("stopped by the deployer")

// run serves until ctx ends, the deployer stops the host, or a server fails.
func (h *host) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	h.stop = cancel
	var wg sync.WaitGroup
	for _, s := range h.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.srv.Serve(s.lis); err != nil {
				cancel(fmt.Errorf("serve %s: %w", s.what, err))
			}
		}()
	}
	var where []string
	for _, s := range h.servers {
		where = append(where, s.what)
	}
	if h.ctl != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.ctl.serve(); err != nil {
				cancel(fmt.Errorf("serve %s: %w", h.ctl.what, err))
			}
		}()
		where = append(where, h.ctl.what)
	}
	log.Printf("%s group %s (%s) of %s, deployment %s; serving %s", ReadyMarker, h.cfg.GetGroup(), strings.Join(h.cfg.GetComponents(), ", "),
		h.cfg.GetApp(), h.cfg.GetDeployment(), orNone(where))
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), errStopped) {
		h.finishAnswers()
	}
	h.close()
	wg.Wait()
	log.Printf("group %s: %s %d calls", h.cfg.GetGroup(), ServedMarker, h.served.Load())
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, errStopped) {
		return fmt.Errorf("group %s: %w", h.cfg.GetGroup(), err)
	}
	return nil
}

// answerLinger is how long a stopped host waits, after its last call
// returned, before it closes a server that cannot stop gracefully: the
// answer is written after the handler returns, so closing at once could cut
// it off.
const answerLinger = 200 * time.Millisecond

// finishAnswers lets the answers of the last calls of a drained host reach
// the wire before close cuts the connections. grpc-go's server stops
// gracefully itself; transport.Server has no graceful stop yet, so the
// other transports get answerLinger.
func (h *host) finishAnswers() {
	linger := false
	for _, s := range h.servers {
		gs, ok := s.srv.(interface{ GracefulStop() })
		if !ok {
			linger = true
			continue
		}
		done := make(chan struct{})
		go func() {
			gs.GracefulStop()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(time.Second):
			// A call arrived after all (a health check); close cuts it.
		}
	}
	if linger {
		time.Sleep(answerLinger)
	}
}

func (h *host) close() {
	for _, s := range h.servers {
		s.srv.Stop()
		// Stop closes the listeners it served; this covers those that
		// never got to Serve.
		_ = s.lis.Close()
	}
	for _, b := range h.peers {
		_ = b.Close()
	}
	if h.ctl != nil {
		// Last, so that a Stop call gets its answer.
		h.ctl.stop(time.Second)
	}
	if h.mesh != nil {
		if err := h.mesh.close(); err != nil {
			log.Printf("group %s: %v", h.cfg.GetGroup(), err)
		}
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing (inproc only)"
	}
	return strings.Join(s, ", ")
}
