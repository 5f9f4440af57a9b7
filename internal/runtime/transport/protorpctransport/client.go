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

// dialTimeout bounds a connection attempt, TLS handshake included. Callers
// stop waiting for it when their own context ends.
const dialTimeout = 20 * time.Second

// Conn calls a Server over one connection, on which concurrent calls are
// multiplexed. It dials on the first call, and again on the first call
// after the connection breaks.
type Conn struct {
	network, addr string
	tls           *tls.Config
	dialer        func(ctx context.Context, network, addr string) (net.Conn, error)
	intercept     grpc.UnaryClientInterceptor
	invoker       grpc.UnaryInvoker

	cur atomic.Pointer[clientConn] // the live connection, if any

	mu      sync.Mutex
	closed  bool
	dialing *dialAttempt // in progress, if any
}

// dialAttempt is one dial that every caller needing a connection waits
// for, each as long as its own context allows.
type dialAttempt struct {
	done chan struct{}
	cc   *clientConn
	err  error
}

// Dial returns a Conn to the Server at addr. It connects on the first call,
// as grpc.NewClient does, so it does not fail when the server is not up
// yet.
func Dial(ctx context.Context, network, addr string, opts transport.DialOptions) (*Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("protorpc dial %s %s: %w", network, addr, err)
	}
	c := &Conn{network: network, addr: addr, tls: opts.TLS, dialer: opts.Dialer, intercept: dispatch.ChainClient(opts.Interceptors)}
	c.invoker = c.invoke
	return c, nil
}

// Invoke implements grpc.ClientConnInterface. Client interceptors receive a
// nil *grpc.ClientConn. Of the call options, grpc.Header and grpc.Trailer
// are honoured; the others are ignored.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if c.intercept != nil {
		return c.intercept(ctx, method, args, reply, nil, c.invoker, opts...)
	}
	return c.invoke(ctx, method, args, reply, nil, opts...)
}

func (c *Conn) invoke(ctx context.Context, method string, args, reply any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	in, ok := args.(proto.Message)
	out, ok2 := reply.(proto.Message)
	if !ok || !ok2 {
		return status.Errorf(codes.Internal, "protorpc: %s: %T and %T are not both protobuf messages", method, args, reply)
	}
	var timeout int64
	if dl, ok := ctx.Deadline(); ok {
		if timeout = int64(time.Until(dl)); timeout <= 0 {
			return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	cc, err := c.connect(ctx)
	if err != nil {
		return err
	}
	cl := calls.Get().(*call)
	id, err := cc.register(cl)
	if err != nil {
		calls.Put(cl)
		return err
	}
	bp, err := encodeFrame(id, kindRequest, requestHeaderSize(method, timeout, md),
		func(b []byte) []byte { return appendRequestHeader(b, method, timeout, md) }, in)
	if err != nil {
		cc.forget(id)
		calls.Put(cl)
		code := codes.Internal
		if proto.Size(in) > MaxMessageSize {
			code = codes.ResourceExhausted
		}
		return status.Errorf(code, "protorpc: %s: request: %v", method, err)
	}
	cc.w.send(bp) // a failure ends the connection, and with it this call

	select {
	case <-cl.done:
	case <-ctx.Done():
		if cc.forget(id) {
			// Nobody will answer cl now: tell the server, and go.
			cc.w.send(cancelFrame(id))
			calls.Put(cl)
			return status.FromContextError(ctx.Err()).Err()
		}
		<-cl.done // the response is being handed over
		cl.free()
		return status.FromContextError(ctx.Err()).Err()
	}
	err = cl.result(method, out, opts)
	cl.free()
	return err
}

// cancelFrame is a Cancel frame for a call, in a pooled buffer.
func cancelFrame(id uint32) *[]byte {
	bp := buffers.Get(prefixLen)
	putPrefix(*bp, id, kindCancel, 0)
	return bp
}

// NewStream implements grpc.ClientConnInterface; protorpc carries unary
// calls only.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.Unimplemented, "protorpc: streaming method %s is not supported", method)
}

// Close closes the connection. Calls in flight fail with Canceled, as on
// a grpc.ClientConn, and so do calls after it.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	cc := c.cur.Swap(nil)
	c.mu.Unlock()
	if cc != nil {
		cc.fail(status.Error(codes.Canceled, "protorpc: connection closed"))
	}
	return nil
}

// connect returns the live connection, dialling if there is none.
func (c *Conn) connect(ctx context.Context) (*clientConn, error) {
	if cc := c.cur.Load(); cc != nil {
		return cc, nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, status.Error(codes.Canceled, "protorpc: connection closed")
	}
	if cc := c.cur.Load(); cc != nil {
		c.mu.Unlock()
		return cc, nil
	}
	d := c.dialing
	if d == nil {
		d = &dialAttempt{done: make(chan struct{})}
		c.dialing = d
		go c.dial(d)
	}
	c.mu.Unlock()
	select {
	case <-d.done:
		return d.cc, d.err
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// dial makes one connection attempt and publishes its result.
func (c *Conn) dial(d *dialAttempt) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	nc, err := c.open(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dialing = nil
	switch {
	case err != nil:
		d.err = status.Errorf(codes.Unavailable, "protorpc: %v", err)
	case c.closed:
		nc.Close()
		d.err = status.Error(codes.Canceled, "protorpc: connection closed")
	default:
		cc := &clientConn{owner: c, nc: nc, calls: map[uint32]*call{}}
		cc.w = newFrameWriter(nc, func(err error) {
			cc.fail(status.Errorf(codes.Unavailable, "protorpc: connection to %s lost: %v", c.addr, err))
		})
		d.cc = cc
		c.cur.Store(d.cc)
		go d.cc.read()
	}
	close(d.done)
}

// open connects, shakes hands if TLS is on, and sends the preface.
func (c *Conn) open(ctx context.Context) (net.Conn, error) {
	nc, err := netconn.Dial(ctx, c.dialer, c.network, c.addr, c.tls)
	if err != nil {
		return nil, err
	}
	if _, err := nc.Write(preface[:]); err != nil {
		nc.Close()
		return nil, fmt.Errorf("writing the preface to %s: %w", c.addr, err)
	}
	return nc, nil
}

// clientConn is one connection of a Conn. Callers write their frames
// themselves, under wmu; a reader goroutine hands each response to its
// caller.
type clientConn struct {
	owner *Conn
	nc    net.Conn

	w *frameWriter

	mu    sync.Mutex
	calls map[uint32]*call // awaiting a response, by id
	next  uint32           // the last id given out
	err   error            // why the connection ended; set once
}

// call is a caller waiting for its response. Calls are pooled; one goes
// back to the pool only once nothing can signal it.
type call struct {
	done chan struct{} // signalled once, by deliver or fail
	body *[]byte       // the response's header and message, from buffers
	hlen int
	err  error
}

var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// register gives cl an id no call in flight has.
func (cc *clientConn) register(cl *call) (uint32, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		return 0, cc.err
	}
	for {
		cc.next++
		if _, used := cc.calls[cc.next]; cc.next != 0 && !used {
			break
		}
	}
	cc.calls[cc.next] = cl
	return cc.next, nil
}

// forget removes a call that has not been answered. It reports false if
// the call was already taken by deliver or fail, which then signal it.
func (cc *clientConn) forget(id uint32) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.calls[id]; !ok {
		return false
	}
	delete(cc.calls, id)
	return true
}

// read hands responses to their callers until the connection ends.
func (cc *clientConn) read() {
	br := bufio.NewReaderSize(cc.nc, readBufferSize)
	for {
		b, err := br.Peek(prefixLen)
		if err != nil {
			cc.fail(status.Errorf(codes.Unavailable, "protorpc: connection to %s lost: %v", cc.owner.addr, err))
			return
		}
		p, err := parsePrefix(b)
		if err != nil {
			cc.fail(status.Errorf(codes.Internal, "protorpc: from %s: %v", cc.owner.addr, err))
			return
		}
		br.Discard(prefixLen)
		n := p.hlen + p.mlen
		if p.kind != kindResponse {
			if _, err := br.Discard(n); err != nil {
				cc.fail(status.Errorf(codes.Unavailable, "protorpc: connection to %s lost: %v", cc.owner.addr, err))
				return
			}
			continue
		}
		if err := p.oversized(); err != nil {
			if _, err := br.Discard(n); err != nil {
				cc.fail(status.Errorf(codes.Unavailable, "protorpc: connection to %s lost: %v", cc.owner.addr, err))
				return
			}
			cc.deliver(p.id, nil, 0, status.Error(codes.ResourceExhausted, "protorpc: response "+err.Error()))
			continue
		}
		bp := buffers.Get(n)
		if _, err := io.ReadFull(br, *bp); err != nil {
			buffers.Put(bp)
			cc.fail(status.Errorf(codes.Unavailable, "protorpc: connection to %s lost: %v", cc.owner.addr, err))
			return
		}
		cc.deliver(p.id, bp, p.hlen, nil)
	}
}

// deliver hands a response to its call, unless the caller has gone.
func (cc *clientConn) deliver(id uint32, body *[]byte, hlen int, err error) {
	cc.mu.Lock()
	cl := cc.calls[id]
	delete(cc.calls, id)
	cc.mu.Unlock()
	if cl == nil {
		if body != nil {
			buffers.Put(body)
		}
		return
	}
	cl.body, cl.hlen, cl.err = body, hlen, err
	cl.done <- struct{}{}
}

// fail ends the connection: every call in flight fails with err, and the
// Conn dials afresh for the next.
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	cc.err = err
	pending := cc.calls
	cc.calls = nil
	cc.mu.Unlock()
	cc.owner.cur.CompareAndSwap(cc, nil)
	cc.nc.Close()
	for _, cl := range pending {
		cl.err = err
		cl.done <- struct{}{}
	}
}

// result turns a delivered response into Invoke's result.
func (cl *call) result(method string, out proto.Message, opts []grpc.CallOption) error {
	if cl.err != nil {
		return cl.err
	}
	b := *cl.body
	if cl.hlen > 0 {
		var h responseHeader
		if err := parseResponseHeader(b[:cl.hlen], &h); err != nil {
			return status.Errorf(codes.Internal, "protorpc: %s: %v", method, err)
		}
		for _, o := range opts {
			switch o := o.(type) {
			case grpc.HeaderCallOption:
				*o.HeaderAddr = h.header
			case grpc.TrailerCallOption:
				*o.TrailerAddr = h.trailer
			}
		}
		if h.status != nil {
			return status.ErrorProto(h.status)
		}
	}
	if err := proto.Unmarshal(b[cl.hlen:], out); err != nil {
		return status.Errorf(codes.Internal, "protorpc: %s: decoding the response: %v", method, err)
	}
	return nil
}

// free returns the response buffer and the call to their pools.
func (cl *call) free() {
	if cl.body != nil {
		buffers.Put(cl.body)
	}
	cl.body, cl.hlen, cl.err = nil, 0, nil
	calls.Put(cl)
}
