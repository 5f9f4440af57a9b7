// Package inproc is the transport between components in one process: a
// call through the generated stub goes straight into the registered
// implementation, on the caller's goroutine, with the request and response
// passed by pointer and never serialised.
//
// A Channel is both ends at once: register implementations on it as on a
// grpc.Server, and hand it to generated clients as their
// grpc.ClientConnInterface.
//
//	ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
//	echo.RegisterEchoServer(ch, echo.Service{})
//	resp, err := echo.NewEchoClient(ch).Echo(ctx, req)
//
// A call takes one of two paths. Services compiled with protoc-gen-go-svclab
// register typed Methods (RegisterMethods, from the generated
// *_svclab.pb.go), and a call becomes a plain Go method call: the
// implementation receives the caller's request itself, and its response's
// fields are copied into the stub's, with no allocation of svclab's own.
// Other services (grpc's health service, hand-written ServiceDescs) go
// through their grpc.MethodHandler, which gets a shallow copy of the
// request. Either way the two sides share nested values (byte slices,
// sub-messages, and on the typed path the request): neither side may modify
// a message after handing it over, the contract Service Weaver's local calls
// have too, and one the grpc stubs already expect.
//
// Interceptors run as on the network transports: client interceptors first,
// then server interceptors around the handler, with the client's outgoing
// metadata delivered as the server's incoming metadata. Streaming methods
// fail with codes.Unimplemented.
package inproc

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/internal/dispatch"
)

// Name names the transport in configs and logs. It is not in the
// transport registry: it has no network and needs no Dial.
const Name = "inproc"

// Channel connects the stubs of one process to the implementations
// registered on it.
type Channel struct {
	table   dispatch.Table
	mu      sync.Mutex                        // serialises registrations
	typed   atomic.Pointer[map[string]*typed] // full method name → typed path
	last    atomic.Pointer[lastCall]          // see lookupTyped
	server  grpc.UnaryServerInterceptor       // nil when there are none
	client  grpc.UnaryClientInterceptor       // nil when there are none
	invoker grpc.UnaryInvoker                 // c.invoke, bound once so calls do not allocate it
}

// New returns an empty Channel. The TLS fields of the options are ignored:
// there is no wire to protect.
func New(server transport.ServerOptions, client transport.DialOptions) *Channel {
	c := &Channel{
		server: dispatch.ChainServer(server.Interceptors),
		client: dispatch.ChainClient(client.Interceptors),
	}
	c.invoker = c.invoke
	return c
}

// RegisterService implements grpc.ServiceRegistrar. It panics on a duplicate
// service, as grpc.Server does.
func (c *Channel) RegisterService(desc *grpc.ServiceDesc, impl any) {
	c.table.RegisterService(desc, impl)
	methods := generated(desc)
	if methods == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]*typed{}
	if old := c.typed.Load(); old != nil {
		m = maps.Clone(*old)
	}
	for name, gm := range methods {
		full := dispatch.FullMethod(desc.ServiceName, name)
		m[full] = &typed{Method: gm, impl: impl, info: grpc.UnaryServerInfo{Server: impl, FullMethod: full}}
	}
	c.typed.Store(&m)
}

// GetServiceInfo reports the registered services, as grpc.Server does.
func (c *Channel) GetServiceInfo() map[string]grpc.ServiceInfo { return c.table.GetServiceInfo() }

// Invoke implements grpc.ClientConnInterface. Client interceptors receive a
// nil *grpc.ClientConn, as there is none.
func (c *Channel) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if c.client != nil {
		return c.client(ctx, method, args, reply, nil, c.invoker, opts...)
	}
	return c.invoke(ctx, method, args, reply, nil)
}

func (c *Channel) invoke(ctx context.Context, method string, args, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	tm := c.lookupTyped(method)
	var m *dispatch.Method
	if tm == nil {
		if m = c.table.Lookup(method); m == nil {
			return status.Errorf(codes.Unimplemented, "inproc: unknown method %s", method)
		}
	}
	if err := ctx.Err(); err != nil {
		// grpc-go fails a call whose context has already ended before
		// sending it; doing the same keeps the transports alike.
		return status.FromContextError(err).Err()
	}
	ctx = serverContext(ctx)
	if tm != nil {
		return c.invokeTyped(ctx, tm, args, reply)
	}
	// Services without generated Methods: the grpc.MethodHandler, with a
	// shallow copy of the request.
	d := dispatch.NewDecoder(args)
	resp, err := m.Handler(m.Impl, ctx, d.Decode, c.server)
	d.Release()
	if err != nil {
		return dispatch.StatusError(err)
	}
	return dispatch.ShallowCopy(reply, resp)
}

func (c *Channel) lookupTyped(method string) *typed {
	// Generated stubs pass their method name as a constant. Keeping the
	// caller's own string makes a repeat call's comparison a pointer check
	// instead of a map lookup.
	if l := c.last.Load(); l != nil && l.method == method {
		return l.t
	}
	m := c.typed.Load()
	if m == nil {
		return nil
	}
	t := (*m)[method]
	if t == nil {
		return nil
	}
	// Calls alternating between methods reuse each method's lastCall, so
	// a miss costs the map lookup and no allocation.
	l := t.last.Load()
	if l == nil || l.method != method {
		l = &lastCall{method, t}
		t.last.Store(l)
	}
	c.last.Store(l)
	return t
}

// lastCall is the method a Channel was called with last, under the name
// the caller used.
type lastCall struct {
	method string
	t      *typed
}

// invokeTyped is the path of generated Methods, given the handler's
// context: a plain method call.
func (c *Channel) invokeTyped(ctx context.Context, tm *typed, args, reply any) error {
	var resp any
	var err error
	if c.server == nil {
		resp, err = tm.Call(tm.impl, ctx, args)
	} else {
		resp, err = c.server(ctx, args, &tm.info, func(ctx context.Context, req any) (any, error) {
			return tm.Call(tm.impl, ctx, req)
		})
	}
	if err != nil {
		return dispatch.StatusError(err)
	}
	return tm.Copy(reply, resp)
}

// serverContext turns the caller's context into the one a handler would see
// across a network: the outgoing metadata becomes incoming, and neither the
// caller's outgoing nor its own incoming metadata leaks through to calls the
// handler makes. Deadline, cancellation and values pass as they are.
func serverContext(ctx context.Context) context.Context {
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		return metadata.NewIncomingContext(metadata.NewOutgoingContext(ctx, nil), md)
	}
	if _, ok := metadata.FromIncomingContext(ctx); ok {
		return metadata.NewIncomingContext(ctx, nil)
	}
	return ctx
}

// NewStream implements grpc.ClientConnInterface; svclab carries unary calls
// only.
func (c *Channel) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.Unimplemented, "inproc: streaming method %s is not supported", method)
}

// Close does nothing; it makes a Channel a transport.Conn.
func (c *Channel) Close() error { return nil }

var _ transport.Conn = (*Channel)(nil)
var _ grpc.ServiceRegistrar = (*Channel)(nil)
