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

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
)

// Environment variables of the host protocol.
const (
	// HostConfigEnv carries a HostConfig, as JSON, to a host process.
	HostConfigEnv = "SVCLAB_HOST_CONFIG"
	// DeploymentEnv carries the deployment's id; it marks every process
	// of a deployment, so leftovers can be found in /proc.
	DeploymentEnv = "SVCLAB_DEPLOYMENT"
	// FailComponentEnv is a test knob: a host whose group holds the named
	// component fails while building it, as a crashing service would.
	FailComponentEnv = "SVCLAB_FAIL_COMPONENT"
	// GatewayTransport serves the HTTP/JSON gateway of the entry group.
	GatewayTransport = "http"
	// ReadyMarker starts the line a host writes to stderr once it serves.
	ReadyMarker = "svclab host ready:"
)

// Endpoint is where a component (or the gateway) is served.
type Endpoint struct {
	Transport string `json:"transport"`
	Network   string `json:"network"` // "tcp" or "unix"
	Addr      string `json:"addr"`    // host:port, or a socket path
}

func (e Endpoint) String() string { return e.Transport + "+" + e.Network + "://" + e.Addr }

// Listener is an Endpoint a host serves on.
type Listener struct {
	Endpoint
	// FD, when above 2, is a listening socket the host inherited (the
	// deployer binds every socket before starting any process, so that no
	// address is raced for and peers can connect before their host
	// accepts). Zero means the host listens on Addr itself.
	FD int `json:"fd,omitempty"`
}

// HostConfig tells a host process which group to run and how to reach the
// rest of the deployment. The local deployer writes it as JSON into
// HostConfigEnv; `svclab host --config FILE` reads it from a file.
type HostConfig struct {
	Deployment string `json:"deployment"`
	App        string `json:"app"`
	// Config is the app's config, as Topology.ConfigJSON encodes it.
	Config json.RawMessage `json:"config"`
	// Transport carries calls across groups: a network transport name, or
	// "inproc" when the whole app is this one group.
	Transport  string   `json:"transport"`
	Group      string   `json:"group"`
	Components []string `json:"components"`
	// Listen maps each component of this group that is called from outside
	// it (including the entry, when this group holds it) to its listener.
	Listen map[string]Listener `json:"listen,omitempty"`
	// Gateway, set only in the entry group, serves the entry component as
	// HTTP/JSON (the http transport) for people and load generators.
	Gateway *Listener `json:"gateway,omitempty"`
	// Entry names the app's entry component.
	Entry string `json:"entry"`
	// Peers maps each component of another group that this group calls to
	// its endpoint.
	Peers map[string]Endpoint `json:"peers,omitempty"`
}

// DecodeHostConfig parses a HostConfig, rejecting unknown fields so that a
// host never silently ignores part of what its deployer meant.
func DecodeHostConfig(b []byte) (*HostConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c HostConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decode host config: %w", err)
	}
	return &c, nil
}

// Middleware are the interceptors a host puts on every server it runs and
// every client it dials, inproc included. Empty until per-hop features
// (tracing, metrics, TLS) arrive.
type Middleware struct {
	Server []grpc.UnaryServerInterceptor
	Client []grpc.UnaryClientInterceptor
}

// RunHost runs one group until ctx ends: it builds the group's components,
// serves each one called from outside the group on its listener (with the
// gRPC health service beside it), serves the gateway when asked, writes
// ReadyMarker to the log, and on cancellation stops every server and
// returns nil. A component that fails to build is an error naming it.
func RunHost(ctx context.Context, cfg *HostConfig, mw Middleware) error {
	h, err := newHost(ctx, cfg, mw)
	if err != nil {
		return fmt.Errorf("group %s: %w", cfg.Group, err)
	}
	return h.run(ctx)
}

type host struct {
	cfg     *HostConfig
	servers []served
	remotes []*lazyConn
}

type served struct {
	what string
	srv  transport.Server
	lis  net.Listener
}

func newHost(ctx context.Context, cfg *HostConfig, mw Middleware) (*host, error) {
	app, err := Lookup(cfg.App)
	if err != nil {
		return nil, err
	}
	conf := app.NewConfig()
	dec := json.NewDecoder(bytes.NewReader(cfg.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(conf); err != nil {
		return nil, fmt.Errorf("decode %s config: %w", cfg.App, err)
	}
	if err := conf.Validate(); err != nil {
		return nil, fmt.Errorf("%s config: %w", cfg.App, err)
	}
	comps := map[string]Component{}
	for _, c := range conf.Components() {
		comps[c.Name] = c
	}
	for _, name := range cfg.Components {
		if _, ok := comps[name]; !ok {
			return nil, fmt.Errorf("app %s has no component %q", cfg.App, name)
		}
	}
	sopts := transport.ServerOptions{Interceptors: mw.Server}
	dopts := transport.DialOptions{Interceptors: mw.Client}

	h := &host{cfg: cfg}
	// One channel per component, because several components of a group may
	// implement the same service (chain's hops), and a channel holds one
	// implementation per service.
	channels := map[string]*inproc.Channel{}
	for _, name := range cfg.Components {
		channels[name] = inproc.New(sopts, dopts)
	}
	var tr transport.Transport
	if cfg.Transport != inproc.Name {
		if tr, err = transport.Lookup(cfg.Transport); err != nil {
			return nil, err
		}
	}
	remotes := map[string]*lazyConn{}
	conn := func(dep string) (grpc.ClientConnInterface, error) {
		if ch, ok := channels[dep]; ok {
			return ch, nil
		}
		if rc, ok := remotes[dep]; ok {
			return rc, nil
		}
		ep, ok := cfg.Peers[dep]
		if !ok || tr == nil {
			return nil, fmt.Errorf("no address for component %s, which is outside group %s", dep, cfg.Group)
		}
		rc := &lazyConn{tr: tr, ep: ep, opts: dopts}
		remotes[dep] = rc
		h.remotes = append(h.remotes, rc)
		return rc, nil
	}

	failing := os.Getenv(FailComponentEnv)
	impls := map[string]any{}
	for _, name := range cfg.Components {
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

	for _, name := range slices.Sorted(maps.Keys(cfg.Listen)) {
		l := cfg.Listen[name]
		c, ok := comps[name]
		if !ok || !slices.Contains(cfg.Components, name) {
			h.close()
			return nil, fmt.Errorf("listener for component %s, which is not in group %s", name, cfg.Group)
		}
		if tr == nil {
			h.close()
			return nil, fmt.Errorf("component %s: transport %s cannot listen", name, cfg.Transport)
		}
		if err := h.serve(tr, sopts, name, l, c, impls[name]); err != nil {
			h.close()
			return nil, err
		}
	}
	if cfg.Gateway != nil {
		c, ok := comps[cfg.Entry]
		if !ok || !slices.Contains(cfg.Components, cfg.Entry) {
			h.close()
			return nil, fmt.Errorf("gateway for entry %s, which is not in group %s", cfg.Entry, cfg.Group)
		}
		gtr, err := transport.Lookup(cfg.Gateway.Transport)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("gateway: %w", err)
		}
		if err := h.serve(gtr, sopts, "gateway", *cfg.Gateway, c, impls[cfg.Entry]); err != nil {
			h.close()
			return nil, err
		}
	}
	return h, nil
}

// serve registers the component and the health service on a new server of
// tr, bound to l. Serving starts in run.
func (h *host) serve(tr transport.Transport, opts transport.ServerOptions, what string, l Listener, c Component, impl any) error {
	lis, err := listen(l)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	srv := tr.NewServer(opts)
	srv.RegisterService(c.Service, impl)
	registerHealth(srv)
	// The listener's own address, as Addr may have asked for port 0.
	at := Endpoint{Transport: l.Transport, Network: lis.Addr().Network(), Addr: lis.Addr().String()}
	h.servers = append(h.servers, served{what: what + " on " + at.String(), srv: srv, lis: lis})
	return nil
}

// registerHealth adds the standard gRPC health service, reporting SERVING
// for every service. Its streaming Watch method is left out because only
// the grpc transport carries streams; Check (and List) are unary.
func registerHealth(srv grpc.ServiceRegistrar) {
	desc := healthpb.Health_ServiceDesc
	desc.Streams = nil
	srv.RegisterService(&desc, health.NewServer())
}

// listen returns l's listener: the inherited socket, or a new one.
func listen(l Listener) (net.Listener, error) {
	if l.FD > 2 {
		f := os.NewFile(uintptr(l.FD), l.Addr)
		if f == nil {
			return nil, fmt.Errorf("inherited listener fd %d for %s is not open", l.FD, l.Addr)
		}
		defer f.Close() // FileListener dups it
		lis, err := net.FileListener(f)
		if err != nil {
			return nil, fmt.Errorf("inherited listener fd %d for %s: %w", l.FD, l.Addr, err)
		}
		return lis, nil
	}
	lis, err := net.Listen(l.Network, l.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", l.Endpoint, err)
	}
	return lis, nil
}

// run serves until ctx ends or a server fails.
func (h *host) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
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
	log.Printf("%s group %s (%s) of %s, deployment %s; serving %s", ReadyMarker, h.cfg.Group, strings.Join(h.cfg.Components, ", "),
		h.cfg.App, h.cfg.Deployment, orNone(where))
	<-ctx.Done()
	h.close()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("group %s: %w", h.cfg.Group, err)
	}
	return nil
}

func (h *host) close() {
	for _, s := range h.servers {
		s.srv.Stop()
		// Stop closes the listeners it served; this covers those that
		// never got to Serve.
		_ = s.lis.Close()
	}
	for _, r := range h.remotes {
		_ = r.Close()
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing (inproc only)"
	}
	return strings.Join(s, ", ")
}

// lazyConn dials its peer on first use. Groups start concurrently, and
// some transports connect (and even handshake) inside Dial; dialing at
// construction would make two groups that call each other wait for each
// other before either serves.
type lazyConn struct {
	tr   transport.Transport
	ep   Endpoint
	opts transport.DialOptions

	conn   atomic.Pointer[transport.Conn]
	mu     sync.Mutex // serialises dialing
	closed bool
}

func (l *lazyConn) get(ctx context.Context) (transport.Conn, error) {
	if c := l.conn.Load(); c != nil {
		return *c, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.conn.Load(); c != nil {
		return *c, nil
	}
	if l.closed {
		return nil, status.Errorf(codes.Unavailable, "connection to %s is closed", l.ep)
	}
	c, err := l.tr.Dial(ctx, l.ep.Network, l.ep.Addr, l.opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Errorf(codes.Unavailable, "dial %s: %v", l.ep, err)
	}
	l.conn.Store(&c)
	return c, nil
}

func (l *lazyConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.Invoke(ctx, method, args, reply, opts...)
}

func (l *lazyConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.NewStream(ctx, desc, method, opts...)
}

func (l *lazyConn) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if c := l.conn.Swap(nil); c != nil {
		return (*c).Close()
	}
	return nil
}
