package protorpctransport

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/internal/dispatch"
	"github.com/svclab/svclab/internal/runtime/transport/internal/netconn"
)

// readBufferSize is the size of each connection's read buffer: a small
// frame and the next one's prefix arrive in one system call.
const readBufferSize = 32 << 10

// Server serves the services registered on it over protorpc connections.
type Server struct {
	table     dispatch.Table
	intercept grpc.UnaryServerInterceptor
	tls       *tls.Config

	base context.Context // ends at Stop, and with it every call's context
	stop context.CancelFunc

	conns netconn.Acceptor

	// work hands calls to idle workers. A fresh goroutine per call would
	// grow its stack anew each time, which took a tenth of the CPU of a
	// small call; a worker keeps the stack it grew.
	work    chan *serverCall
	workers atomic.Int32 // workers alive, busy or idle
}

// Worker limits: at most maxWorkers wait for calls when idle (more
// calls at once get a goroutine each), and a worker runs at most
// callsPerWorker calls, after which a fresh one takes its place, so a
// stack grown by one deep call is not kept for ever.
const (
	maxWorkers     = 256
	callsPerWorker = 1 << 16
)

// NewServer returns a Server with no services.
func NewServer(opts transport.ServerOptions) *Server {
	s := &Server{
		intercept: dispatch.ChainServer(opts.Interceptors),
		tls:       opts.TLS,
		work:      make(chan *serverCall),
	}
	s.base, s.stop = context.WithCancel(context.Background())
	return s
}

// RegisterService implements grpc.ServiceRegistrar.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.table.RegisterService(desc, impl)
}

// GetServiceInfo reports the registered services, as grpc.Server does.
func (s *Server) GetServiceInfo() map[string]grpc.ServiceInfo { return s.table.GetServiceInfo() }

// Serve accepts connections on lis until Stop. It returns nil after Stop.
func (s *Server) Serve(lis net.Listener) error {
	err := s.conns.Serve(lis, s.tls, func(nc net.Conn) { s.newConn(nc).serve() })
	if err != nil {
		return fmt.Errorf("protorpc: %w", err)
	}
	return nil
}

// Stop closes the listeners and connections and ends the context of every
// call in progress.
func (s *Server) Stop() {
	s.conns.Stop()
	s.stop()
}

// serverConn is one client's connection. Its reader goroutine (serve)
// parses frames and hands each call to a worker, which writes the
// response through the connection's frameWriter.
type serverConn struct {
	s      *Server
	nc     net.Conn
	ctx    context.Context // ends with the connection
	cancel context.CancelFunc

	w *frameWriter

	mu    sync.Mutex
	calls map[uint32]*serverCall // calls in progress, by id

	// methods caches the table's lookups by the method's name as the
	// client spells it, so that the name, read as bytes, is looked up
	// without being made a string. Only serve uses it.
	methods map[string]*dispatch.Method
}

func (s *Server) newConn(nc net.Conn) *serverConn {
	sc := &serverConn{s: s, nc: nc, calls: map[uint32]*serverCall{}, methods: map[string]*dispatch.Method{}}
	sc.ctx, sc.cancel = context.WithCancel(s.base)
	// A failed write closes the connection, which ends the reader and with
	// it every call's context.
	sc.w = newFrameWriter(nc, func(error) { nc.Close() })
	return sc
}

// serve reads the connection until it fails or closes, then ends every
// call's context.
func (sc *serverConn) serve() {
	defer func() {
		sc.cancel()
		sc.nc.Close()
	}()
	br := bufio.NewReaderSize(sc.nc, readBufferSize)
	var pre [len(preface)]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil || pre != preface {
		return // not a protorpc client, or not this version
	}
	for {
		b, err := br.Peek(prefixLen)
		if err != nil {
			return
		}
		p, err := parsePrefix(b)
		if err != nil {
			return
		}
		br.Discard(prefixLen)
		switch p.kind {
		case kindRequest:
			err = sc.request(br, p)
		case kindCancel:
			_, err = br.Discard(p.hlen + p.mlen)
			sc.cancelCall(p.id)
		default:
			// A kind this version does not know: a later version's
			// addition, which it must not depend on an old server reading.
			_, err = br.Discard(p.hlen + p.mlen)
		}
		if err != nil {
			return
		}
	}
}

// request reads a request frame's header and message and starts its call.
// An error means the stream is lost.
func (sc *serverConn) request(br *bufio.Reader, p prefix) error {
	if err := p.oversized(); err != nil {
		if _, err := br.Discard(p.hlen + p.mlen); err != nil {
			return err
		}
		sc.respond(p.id, nil, status.Error(codes.ResourceExhausted, "protorpc: request "+err.Error()), nil)
		return nil
	}
	bp := buffers.Get(p.hlen + p.mlen)
	if _, err := io.ReadFull(br, *bp); err != nil {
		buffers.Put(bp)
		return err
	}
	var h requestHeader
	if err := parseRequestHeader((*bp)[:p.hlen], &h); err != nil {
		buffers.Put(bp)
		return err
	}
	m := sc.methods[string(h.method)]
	if m == nil {
		// Only found methods are cached: a client naming methods at random
		// must not grow the map.
		if m = sc.s.table.Lookup(string(h.method)); m != nil {
			sc.methods[string(h.method)] = m
		}
	}
	if m == nil {
		buffers.Put(bp)
		sc.respond(p.id, nil, status.Errorf(codes.Unimplemented, "protorpc: unknown method %s", h.method), nil)
		return nil
	}
	c := serverCalls.Get().(*serverCall)
	c.sc, c.id, c.m, c.body, c.msg = sc, p.id, m, bp, (*bp)[p.hlen:]
	// The context is made here, not on the call's goroutine, so that a
	// Cancel read right after the request finds the call registered.
	if h.timeout != 0 { // a negative timeout has expired, as grpc-timeout's 0n has
		c.ctx, c.cancel = context.WithTimeout(sc.ctx, time.Duration(h.timeout))
	} else {
		c.ctx, c.cancel = context.WithCancel(sc.ctx)
	}
	if h.md != nil {
		c.ctx = metadata.NewIncomingContext(c.ctx, h.md)
	}
	sc.mu.Lock()
	_, dup := sc.calls[p.id]
	if !dup {
		sc.calls[p.id] = c
	}
	sc.mu.Unlock()
	if dup {
		c.cancel()
		c.release()
		return fmt.Errorf("protorpc: call id %d reused while in progress", p.id)
	}
	sc.s.start(c)
	return nil
}

// start runs c on an idle worker, or else on a new goroutine.
func (s *Server) start(c *serverCall) {
	select {
	case s.work <- c:
	default:
		go s.worker(c)
	}
}

// worker runs c, then waits for more calls if the server has fewer than
// maxWorkers workers, until the server stops.
func (s *Server) worker(c *serverCall) {
	if s.workers.Add(1) > maxWorkers {
		s.workers.Add(-1)
		c.run()
		return
	}
	for range callsPerWorker {
		c.run()
		select {
		case c = <-s.work:
		case <-s.base.Done():
			s.workers.Add(-1)
			return
		}
	}
	s.workers.Add(-1)
	go s.worker(c)
}

// cancelCall ends the context of the call with the given id; its response
// will not be sent, the client having forgotten the id.
func (sc *serverConn) cancelCall(id uint32) {
	sc.mu.Lock()
	var cancel context.CancelFunc
	if c := sc.calls[id]; c != nil {
		delete(sc.calls, id)
		// Copied under the lock: once the entry is gone the call may
		// finish and its struct be reused.
		cancel = c.cancel
	}
	sc.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// respond writes a call's response: out on success, else err's status,
// with the metadata the handler set on stream (which may be nil).
func (sc *serverConn) respond(id uint32, out any, err error, stream *serverStream) {
	var header, trailer metadata.MD
	if stream != nil {
		header, trailer = stream.finish()
	}
	var st []byte
	var msg proto.Message
	if err != nil {
		st = encodeStatus(status.Convert(dispatch.StatusError(err)))
	} else if msg, _ = out.(proto.Message); msg == nil {
		st = encodeStatus(status.Newf(codes.Internal, "protorpc: the handler returned a %T, not a protobuf message", out))
	}
	bp, err := encodeFrame(id, kindResponse, responseHeaderSize(st, header, trailer),
		func(b []byte) []byte { return appendResponseHeader(b, st, header, trailer) }, msg)
	if err != nil {
		// The response itself cannot go: say why instead, as grpc-go does.
		code := codes.Internal
		if proto.Size(msg) > MaxMessageSize {
			code = codes.ResourceExhausted
		}
		st = encodeStatus(status.Newf(code, "protorpc: response: %v", err))
		bp, err = encodeFrame(id, kindResponse, responseHeaderSize(st, header, trailer),
			func(b []byte) []byte { return appendResponseHeader(b, st, header, trailer) }, nil)
		if err != nil {
			panic("protorpc: a frame without a message failed to encode: " + err.Error())
		}
	}
	sc.w.send(bp)
}

// serverCall is one call in progress. It is pooled: its decode func is
// bound once, where a closure per call would be an allocation.
type serverCall struct {
	sc     *serverConn
	id     uint32
	m      *dispatch.Method
	ctx    context.Context
	cancel context.CancelFunc
	body   *[]byte // the frame's header and message, from buffers
	msg    []byte  // the message, within body

	decode func(any) error // the dec func for the method handler
}

var serverCalls = sync.Pool{New: func() any {
	c := new(serverCall)
	c.decode = func(in any) error {
		m, ok := in.(proto.Message)
		if !ok {
			return dispatch.TypeError(in, proto.Message(nil))
		}
		err := proto.Unmarshal(c.msg, m) // copies what it keeps: the buffer can go
		c.msg = nil
		if c.body != nil {
			buffers.Put(c.body)
			c.body = nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "protorpc: decoding the request for %s: %v", c.m.FullMethod, err)
		}
		return nil
	}
	return c
}}

// run calls the handler and sends its response, unless the client
// cancelled the call.
func (c *serverCall) run() {
	sc := c.sc
	stream := &serverStream{method: c.m.FullMethod}
	ctx := grpc.NewContextWithServerTransportStream(c.ctx, stream)
	out, err := c.m.Handler(c.m.Impl, ctx, c.decode, sc.s.intercept)
	c.cancel()
	sc.mu.Lock()
	live := sc.calls[c.id] == c
	if live {
		delete(sc.calls, c.id)
	}
	sc.mu.Unlock()
	if live {
		sc.respond(c.id, out, err, stream)
	}
	c.release()
}

// release returns the call's buffer and the call to their pools.
func (c *serverCall) release() {
	if c.body != nil {
		buffers.Put(c.body)
	}
	decode := c.decode
	*c = serverCall{decode: decode}
	serverCalls.Put(c)
}

// serverStream is the grpc.ServerTransportStream of a call, through which
// grpc.SetHeader, grpc.SendHeader and grpc.SetTrailer reach the response.
// A unary response is one frame, so SendHeader sends nothing early: it
// only fixes the header.
type serverStream struct {
	method string

	mu              sync.Mutex // a handler may hand its context to goroutines
	header, trailer metadata.MD
	headerSent      bool
	done            bool
}

func (s *serverStream) Method() string { return s.method }

func (s *serverStream) SetHeader(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.headerSent || s.done {
		return status.Error(codes.Internal, "protorpc: SetHeader after the header was sent")
	}
	s.header = metadata.Join(s.header, md)
	return nil
}

func (s *serverStream) SendHeader(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.headerSent || s.done {
		return status.Error(codes.Internal, "protorpc: SendHeader called twice")
	}
	s.header = metadata.Join(s.header, md)
	s.headerSent = true
	return nil
}

func (s *serverStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return status.Error(codes.Internal, "protorpc: SetTrailer after the response was sent")
	}
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// finish returns the metadata to send; later calls fail.
func (s *serverStream) finish() (header, trailer metadata.MD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	return s.header, s.trailer
}
