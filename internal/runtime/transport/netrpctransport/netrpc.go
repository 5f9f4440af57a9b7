// Package netrpctransport is the "netrpc" transport: Go's net/rpc with
// gob, as the S4 study used it.
//
// net/rpc dispatches on static Go method types, so every call goes through
// one generic method, "Svclab.Call", whose argument is an envelope
// (Request) naming the gRPC method, the caller's remaining time and its
// metadata, and the request message; the reply (Response) carries a gRPC
// status on failure and the response message on success. The codec is
// net/rpc's gob codec with the envelope's fields added to net/rpc's header
// and the message as the body, a gob value of the generated Go struct, so
// a call sends as many gob values as one of bare net/rpc; gob describes
// each type once per connection and sends only values after that.
//
// A deadline becomes a server-side context deadline. A call the client
// cancels returns at once, and a second method, "Svclab.Cancel", tells the
// server to cancel the handler's context.
//
// gob carries only exported struct fields, which for generated messages
// are exactly the protobuf fields. It cannot encode a struct with fields
// but none exported: a message with no fields at all (google.protobuf.Empty)
// travels as nothing and arrives as its zero value, but such a message
// nested inside another cannot be sent. gob also flattens pointers, so an
// empty sub-message that was set arrives unset, and so does a proto3
// optional scalar set to its zero value.
//
// Importing the package registers the transport.
package netrpctransport

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/internal/dispatch"
	"github.com/svclab/svclab/internal/runtime/transport/internal/netconn"
)

// Name is the deploy.transport value that selects this transport.
const Name = "netrpc"

// The net/rpc service and method names every call uses.
const (
	rpcService = "Svclab"
	callMethod = rpcService + ".Call"
	cancelCall = rpcService + ".Cancel"
)

func init() { transport.Register(Transport{}) }

// Transport is the netrpc transport.
type Transport struct{}

// Name returns "netrpc".
func (Transport) Name() string { return Name }

// Networks returns tcp and unix: loopback TCP is what a split deployment
// pays between machines, so it comes first; unix sockets are opt-in.
func (Transport) Networks() []string { return []string{"tcp", "unix"} }

// NewServer returns a *Server.
func (Transport) NewServer(opts transport.ServerOptions) transport.Server { return NewServer(opts) }

// Dial returns a *Conn.
func (Transport) Dial(ctx context.Context, network, addr string, opts transport.DialOptions) (transport.Conn, error) {
	return Dial(ctx, network, addr, opts)
}

// Request is the envelope of one call. It is exported because net/rpc
// requires the argument types of its methods to be. On the wire its fields
// ride in net/rpc's header and the message is the body (see codec.go).
type Request struct {
	// Method is the gRPC full method name, "/package.Service/Method".
	Method string
	// Timeout is the caller's remaining time in nanoseconds, 0 for none:
	// relative, as grpc-timeout is, so the hosts' clocks need not agree.
	Timeout int64
	// ID, when non-zero, is the handle by which Cancel names the call.
	ID uint64
	// Metadata is the caller's outgoing metadata.
	Metadata map[string][]string
	// NoMsg is set when no message follows: gob cannot encode a struct with
	// no exported fields, which is what a message with no fields is.
	NoMsg bool

	msg any          // the request message
	mt  *methodEntry // what the codec resolved Method to; nil if unknown
}

// Response is the reply envelope. On the wire its fields ride in net/rpc's
// header and the message, unless NoMsg is set, is the body.
type Response struct {
	// Status is the google.rpc.Status, protobuf-encoded, of a failed call.
	Status []byte
	// NoMsg is set when no message follows: on failure, or for a message
	// with no fields.
	NoMsg bool

	msg any // the response message
}

// Server serves registered services over net/rpc.
type Server struct {
	table     dispatch.Table
	intercept grpc.UnaryServerInterceptor
	tls       *tls.Config
	rpc       *rpc.Server

	base context.Context // ends at Stop, and with it every handler's context
	stop context.CancelFunc

	conns netconn.Acceptor

	methods  sync.Map // full method name -> *messageTypes
	inflight sync.Map // call ID -> context.CancelFunc, for calls that can be cancelled
	early    earlyCancels
}

// NewServer returns a Server with no services.
func NewServer(opts transport.ServerOptions) *Server {
	s := &Server{
		intercept: dispatch.ChainServer(opts.Interceptors),
		tls:       opts.TLS,
		rpc:       rpc.NewServer(),
	}
	s.table.OnRegister = s.registerService
	s.base, s.stop = context.WithCancel(context.Background())
	if err := s.rpc.RegisterName(rpcService, &receiver{s}); err != nil {
		panic("netrpc: " + err.Error()) // the receiver's methods are fixed: a bug here
	}
	return s
}

// RegisterService implements grpc.ServiceRegistrar. It registers the
// service's message types with gob, which needs the service in the
// protobuf registry, as generated code puts it; it panics otherwise.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.table.RegisterService(desc, impl)
}

// GetServiceInfo reports the registered services, as grpc.Server does.
func (s *Server) GetServiceInfo() map[string]grpc.ServiceInfo { return s.table.GetServiceInfo() }

// Serve accepts connections on lis until Stop. It returns nil after Stop.
func (s *Server) Serve(lis net.Listener) error {
	err := s.conns.Serve(lis, s.tls, func(c net.Conn) {
		s.rpc.ServeCodec(newServerCodec(s, c)) // closes c when the client goes away
	})
	if err != nil {
		return fmt.Errorf("netrpc: %w", err)
	}
	return nil
}

// Stop closes the listeners and connections and ends the context of every
// call in progress.
func (s *Server) Stop() {
	s.conns.Stop()
	s.stop()
}

// receiver is the one net/rpc service; its exported methods are the
// transport's wire protocol.
type receiver struct{ s *Server }

// Call runs one gRPC method. Its error return is always nil: failures go in
// resp.Status, where their gRPC code survives, rather than in net/rpc's
// string-only error.
func (r *receiver) Call(req *Request, resp *Response) error {
	s := r.s
	mt := req.mt
	if mt == nil || mt.m == nil {
		resp.setStatus(status.New(codes.Unimplemented, "netrpc: unknown method "+req.Method))
		return nil
	}
	ctx := s.base
	var cancel context.CancelFunc
	switch {
	case req.Timeout != 0:
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Timeout))
	case req.ID != 0:
		ctx, cancel = context.WithCancel(ctx)
	}
	if cancel != nil {
		defer cancel()
	}
	if req.ID != 0 {
		s.inflight.Store(req.ID, cancel)
		defer s.inflight.Delete(req.ID)
		if s.early.take(req.ID) {
			cancel() // the Cancel overtook the call
		}
	}
	if len(req.Metadata) > 0 {
		ctx = metadata.NewIncomingContext(ctx, metadata.MD(req.Metadata))
	}
	dec := dispatch.NewDecoder(req.msg)
	out, err := mt.m.Handler(mt.m.Impl, ctx, dec.Decode, s.intercept)
	dec.Release()
	if err != nil {
		resp.setStatus(status.Convert(dispatch.StatusError(err)))
		return nil
	}
	if reflect.TypeOf(out) != mt.types.out {
		// The client decodes into its own reply type, which is the
		// declared one; an interceptor that swapped the response for
		// another type would desynchronise the stream.
		resp.setStatus(status.Newf(codes.Internal, "netrpc: %s returned a %T, want %v", req.Method, out, mt.types.out))
		return nil
	}
	resp.NoMsg, resp.msg = mt.types.outEmpty, out
	return nil
}

// Cancel cancels the call with the given ID, if it is still running.
func (r *receiver) Cancel(id uint64, found *bool) error {
	if c, ok := r.s.inflight.Load(id); ok {
		c.(context.CancelFunc)()
		*found = true
		return nil
	}
	// net/rpc runs each request on its own goroutine, so a Cancel can
	// overtake the Call it cancels; remember it for a while.
	r.s.early.add(id)
	return nil
}

func (resp *Response) setStatus(st *status.Status) {
	b, err := proto.Marshal(st.Proto())
	if err != nil {
		b, _ = proto.Marshal(&spb.Status{Code: int32(st.Code()), Message: st.Message()})
	}
	resp.Status, resp.NoMsg = b, true
}

// earlyCancels remembers Cancels that arrived before their Call. Entries
// live a minute at most: a Cancel that arrives after its call finished
// leaves one behind that no Call will take.
type earlyCancels struct {
	mu  sync.Mutex
	ids map[uint64]time.Time
}

func (e *earlyCancels) add(id uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ids == nil {
		e.ids = map[uint64]time.Time{}
	}
	now := time.Now()
	if len(e.ids) >= 1024 {
		for k, t := range e.ids {
			if now.Sub(t) > time.Minute {
				delete(e.ids, k)
			}
		}
	}
	e.ids[id] = now
}

func (e *earlyCancels) take(id uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.ids[id]; ok {
		delete(e.ids, id)
		return true
	}
	return false
}

// Conn calls a Server over one net/rpc connection, which multiplexes
// concurrent calls. It dials on the first call and again on the first call
// after the connection breaks.
type Conn struct {
	network, addr string
	tls           *tls.Config
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	intercept     grpc.UnaryClientInterceptor
	invoker       grpc.UnaryInvoker

	idBase uint64 // random, so IDs from different clients do not collide
	nextID atomic.Uint64
	last   atomic.Pointer[lastTypes]

	mu     sync.Mutex
	client *rpc.Client
	closed bool
}

// Dial returns a Conn to the Server at addr. It connects on the first call,
// as grpc.NewClient does, so it does not fail when the server is not up
// yet.
func Dial(ctx context.Context, network, addr string, opts transport.DialOptions) (*Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("netrpc dial %s %s: %w", network, addr, err)
	}
	var seed [8]byte
	rand.Read(seed[:])
	c := &Conn{
		network:   network,
		addr:      addr,
		tls:       opts.TLS,
		dial:      opts.Dialer,
		intercept: dispatch.ChainClient(opts.Interceptors),
		idBase:    binary.LittleEndian.Uint64(seed[:]),
	}
	c.invoker = c.invoke
	return c, nil
}

// rpcClient returns the live connection, dialling if there is none.
func (c *Conn) rpcClient(ctx context.Context) (*rpc.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, status.Error(codes.Canceled, "netrpc: connection closed")
	}
	if c.client != nil {
		return c.client, nil
	}
	nc, err := netconn.Dial(ctx, c.dial, c.network, c.addr, c.tls)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "netrpc: %v", err)
	}
	c.client = rpc.NewClientWithCodec(newClientCodec(nc))
	return c.client, nil
}

// broken forgets cl after it failed, so the next call dials afresh.
func (c *Conn) broken(cl *rpc.Client) {
	c.mu.Lock()
	if c.client == cl {
		c.client = nil
	}
	c.mu.Unlock()
	cl.Close()
}

// Invoke implements grpc.ClientConnInterface. Client interceptors receive a
// nil *grpc.ClientConn.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if c.intercept != nil {
		return c.intercept(ctx, method, args, reply, nil, c.invoker, opts...)
	}
	return c.invoke(ctx, method, args, reply, nil)
}

func (c *Conn) invoke(ctx context.Context, method string, args, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	in, out, err := c.messageTypes(args, reply)
	if err != nil {
		return err
	}
	st := callStates.Get().(*callState)
	st.req = Request{Method: method, NoMsg: in.empty, msg: args}
	req, resp := &st.req, &st.resp
	if dl, ok := ctx.Deadline(); ok {
		req.Timeout = int64(time.Until(dl))
		if req.Timeout <= 0 {
			return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
	}
	done := ctx.Done()
	if done != nil {
		req.ID = c.idBase + c.nextID.Add(1)
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		req.Metadata = md
	}
	cl, err := c.rpcClient(ctx)
	if err != nil {
		return err
	}

	if !out.empty {
		if done == nil {
			// The call cannot return before its reply is in: decode the
			// reply straight into the caller's message.
			resp.msg = reply
		} else {
			resp.msg = reflect.New(reflect.TypeOf(reply).Elem()).Interface()
		}
	}
	call := cl.Go(callMethod, req, resp, st.done)
	select {
	case <-call.Done:
	case <-done:
		// The reply, if it comes, lands in resp.msg, which is not the
		// caller's and which nobody reads; st is not reused for the same
		// reason.
		cl.Go(cancelCall, req.ID, new(bool), make(chan *rpc.Call, 1))
		return status.FromContextError(ctx.Err()).Err()
	}
	err = c.result(cl, call, method, reply, out)
	*st = callState{done: st.done}
	callStates.Put(st)
	return err
}

// callState is what a call needs beside net/rpc's Call. Once the reply is
// in, net/rpc holds no reference to it, so it is pooled: every allocation
// on this path shows in the comparison with bare net/rpc.
type callState struct {
	req  Request
	resp Response
	done chan *rpc.Call
}

var callStates = sync.Pool{New: func() any { return &callState{done: make(chan *rpc.Call, 1)} }}

// result turns a finished call into Invoke's result.
func (c *Conn) result(cl *rpc.Client, call *rpc.Call, method string, reply any, out *gobType) error {
	resp := call.Reply.(*Response)
	if err := call.Error; err != nil {
		var se rpc.ServerError
		if errors.As(err, &se) {
			return status.Errorf(codes.Internal, "netrpc: %s: server: %v", method, err)
		}
		c.broken(cl)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, rpc.ErrShutdown) || errors.Is(err, io.EOF) {
			return status.Errorf(codes.Unavailable, "netrpc: %s: connection lost: %v", method, err)
		}
		return status.Errorf(codes.Unavailable, "netrpc: %s: %v", method, err)
	}
	if resp.Status != nil {
		var sp spb.Status
		if err := proto.Unmarshal(resp.Status, &sp); err != nil {
			return status.Errorf(codes.Internal, "netrpc: %s: undecodable status: %v", method, err)
		}
		return status.ErrorProto(&sp)
	}
	if resp.NoMsg {
		if !out.empty {
			return status.Errorf(codes.Internal, "netrpc: %s: response without a message", method)
		}
		return nil
	}
	if resp.msg == reply {
		return nil
	}
	return dispatch.ShallowCopy(reply, resp.msg)
}

// NewStream implements grpc.ClientConnInterface; the netrpc transport
// carries unary calls only.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.Unimplemented, "netrpc: streaming method %s is not supported", method)
}

// Close closes the connection; calls in flight fail with Unavailable.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.client != nil {
		err := c.client.Close()
		c.client = nil
		if err != nil && !errors.Is(err, rpc.ErrShutdown) {
			return fmt.Errorf("netrpc close %s: %w", c.addr, err)
		}
	}
	return nil
}

// messageTypes looks up what the transport knows of the request and
// response types, remembering the last pair: a Conn mostly carries one
// method, or a few, and this spares two map lookups per call.
func (c *Conn) messageTypes(args, reply any) (in, out *gobType, err error) {
	at, rt := reflect.TypeOf(args), reflect.TypeOf(reply)
	if l := c.last.Load(); l != nil && l.args == at && l.reply == rt {
		return l.in, l.out, nil
	}
	in, out = registerMessage(args), registerMessage(reply)
	if in.err != nil {
		return nil, nil, status.Error(codes.Internal, in.err.Error())
	}
	if out.err != nil {
		return nil, nil, status.Error(codes.Internal, out.err.Error())
	}
	c.last.Store(&lastTypes{at, rt, in, out})
	return in, out, nil
}

type lastTypes struct {
	args, reply reflect.Type
	in, out     *gobType
}

// messageTypes is what the server knows of one method's messages.
type messageTypes struct {
	in, out  reflect.Type
	outEmpty bool
}

// methodEntry is a method as a connection's codec resolved it.
type methodEntry struct {
	name  string
	m     *dispatch.Method // nil for a method the server does not have
	types *messageTypes
}

// resolve looks a method up for a connection that named it.
func (s *Server) resolve(method string) *methodEntry {
	e := &methodEntry{name: method, m: s.table.Lookup(method)}
	if t, ok := s.methods.Load(method); ok {
		e.types = t.(*messageTypes)
	} else {
		e.m = nil // registered but not in the protobuf registry: cannot decode
	}
	return e
}
