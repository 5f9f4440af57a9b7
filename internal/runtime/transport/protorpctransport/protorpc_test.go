package protorpctransport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/proto/echo"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// serve starts a Server with the echo service on a loopback listener.
func serve(t *testing.T, lis net.Listener, opts transport.ServerOptions) *Server {
	t.Helper()
	s := NewServer(opts)
	echo.RegisterEchoServer(s, echo.Service{})
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func listenTCP(t *testing.T) *countingListener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &countingListener{Listener: lis}
}

func dial(t *testing.T, addr string, opts transport.DialOptions) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), "tcp", addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMultiplexed runs many calls at once, all in their handlers together,
// over the one connection a Conn keeps.
func TestMultiplexed(t *testing.T) {
	const n = 200
	var arrived sync.WaitGroup
	arrived.Add(n)
	allIn := make(chan struct{})
	go func() { arrived.Wait(); close(allIn) }()
	barrier := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		arrived.Done()
		select {
		case <-allIn:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return h(ctx, req)
	}
	lis := listenTCP(t)
	serve(t, lis, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{barrier}})
	c := echo.NewEchoClient(dial(t, lis.Addr().String(), transport.DialOptions{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			p := bytes.Repeat([]byte{byte(i)}, 1+i*50)
			resp, err := c.Echo(ctx, &echo.EchoRequest{Payload: p})
			switch {
			case err != nil:
				errs <- err
			case !bytes.Equal(resp.Payload, p):
				errs <- errors.New("a call got another call's payload")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := lis.accepted.Load(); got != 1 {
		t.Errorf("%d calls used %d connections, want 1", n, got)
	}
}

// TestReconnectAfterRestart restarts the server on the same address, twice,
// while the client keeps its Conn: each time the calls in flight fail with
// Unavailable and the next calls get through on a new connection.
func TestReconnectAfterRestart(t *testing.T) {
	lis := listenTCP(t)
	addr := lis.Addr().String()
	conn := dial(t, addr, transport.DialOptions{})
	c := echo.NewEchoClient(conn)
	s := NewServer(transport.ServerOptions{})
	echo.RegisterEchoServer(s, echo.Service{})
	go s.Serve(lis)
	for restart := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := c.Echo(ctx, &echo.EchoRequest{Payload: []byte("hi")}); err != nil {
			cancel()
			t.Fatalf("after %d restarts: %v", restart, err)
		}
		inflight := make(chan error, 1)
		go func() {
			_, err := c.Echo(ctx, &echo.EchoRequest{SleepMicros: 10e6})
			inflight <- err
		}()
		waitFor(t, func() bool { return pending(conn) == 1 })
		s.Stop()
		if err := <-inflight; status.Code(err) != codes.Unavailable {
			t.Errorf("call in flight at the server's stop: %v, want Unavailable", err)
		}
		cancel()
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		lis = &countingListener{Listener: l}
		s = NewServer(transport.ServerOptions{})
		echo.RegisterEchoServer(s, echo.Service{})
		go s.Serve(lis)
	}
	s.Stop()
}

// pending counts the calls a Conn awaits an answer for.
func pending(c *Conn) int {
	cc := c.cur.Load()
	if cc == nil {
		return 0
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.calls)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCancelFreesSlot cancels a call: the client forgets it at once, and
// the server's handler sees Canceled through the cancel frame, the
// connection staying up.
func TestCancelFreesSlot(t *testing.T) {
	entered := make(chan struct{}, 1)
	ended := make(chan error, 1)
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		entered <- struct{}{}
		resp, err := h(ctx, req)
		ended <- context.Cause(ctx)
		return resp, err
	}
	lis := listenTCP(t)
	serve(t, lis, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{record}})
	conn := dial(t, lis.Addr().String(), transport.DialOptions{})
	c := echo.NewEchoClient(conn)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Echo(ctx, &echo.EchoRequest{SleepMicros: 10e6})
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled call: %v, want Canceled", err)
	}
	if n := pending(conn); n != 0 {
		t.Errorf("client still holds %d calls after the cancel", n)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, context.Canceled) {
			t.Errorf("handler's context ended with %v, want Canceled", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler still running 5s after the cancel")
	}
	if _, err := c.Echo(context.Background(), &echo.EchoRequest{}); err != nil {
		t.Fatalf("call after the cancel: %v", err)
	}
	<-entered
	if got := lis.accepted.Load(); got != 1 {
		t.Errorf("the cancel cost the connection: %d connections, want 1", got)
	}
}

// TestCancelFrame checks the server's side of a cancel frame, as another
// implementation's client would see it: the cancelled call gets no
// response, and its id is free for a new call at once.
func TestCancelFrame(t *testing.T) {
	lis := listenTCP(t)
	serve(t, lis, transport.ServerOptions{})
	r := rawDial(t, lis.Addr().String())
	const method = "/svclab.echo.Echo/Echo"
	r.request(5, method, 0, &echo.EchoRequest{SleepMicros: 10e6})
	cancel := make([]byte, prefixLen)
	putPrefix(cancel, 5, kindCancel, 0)
	if _, err := r.nc.Write(cancel); err != nil {
		t.Fatal(err)
	}
	r.request(5, method, 0, &echo.EchoRequest{Payload: []byte("five again")})
	r.request(6, method, 0, &echo.EchoRequest{Payload: []byte("six")})
	got := map[uint32]string{}
	for range 2 {
		var resp echo.EchoResponse
		id, st := r.response(&resp)
		if st.Code() != codes.OK {
			t.Fatalf("call %d: %v", id, st)
		}
		got[id] = string(resp.Payload)
	}
	if got[5] != "five again" || got[6] != "six" {
		t.Errorf("responses %v, want call 5's second request and call 6", got)
	}
	// The cancelled handler ended at once; had its response been sent, it
	// would be here by now.
	r.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := r.br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read after the answers: %d bytes, %v; want nothing", n, err)
	}
}

// rawConn speaks frames to a server directly, with no client of its own to
// enforce deadlines or limits.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write(preface[:]); err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) request(id uint32, method string, timeout time.Duration, msg proto.Message) {
	r.t.Helper()
	// Encoded here, not by encodeFrame, which refuses oversized messages.
	b := appendRequestHeader(make([]byte, prefixLen), method, int64(timeout), nil)
	hlen := len(b) - prefixLen
	b, err := proto.MarshalOptions{}.MarshalAppend(b, msg)
	if err != nil {
		r.t.Fatal(err)
	}
	putPrefix(b, id, kindRequest, hlen)
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// response reads the next frame, which must be a response, and returns
// its id, its status, and its message decoded into out.
func (r *rawConn) response(out proto.Message) (uint32, *status.Status) {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, prefixLen)
	if _, err := io.ReadFull(r.br, b); err != nil {
		r.t.Fatalf("reading a response: %v", err)
	}
	p, err := parsePrefix(b)
	if err != nil {
		r.t.Fatal(err)
	}
	if p.kind != kindResponse {
		r.t.Fatalf("frame of kind %d, want a response", p.kind)
	}
	body := make([]byte, p.hlen+p.mlen)
	if _, err := io.ReadFull(r.br, body); err != nil {
		r.t.Fatal(err)
	}
	var h responseHeader
	if err := parseResponseHeader(body[:p.hlen], &h); err != nil {
		r.t.Fatal(err)
	}
	if h.status != nil {
		return p.id, status.FromProto(h.status)
	}
	if err := proto.Unmarshal(body[p.hlen:], out); err != nil {
		r.t.Fatal(err)
	}
	return p.id, status.New(codes.OK, "")
}

// TestDeadlineEnforcedByServer sends a request with a 100ms timeout and
// nothing that would cancel it from the client's side: the server itself
// ends the handler and answers DeadlineExceeded.
func TestDeadlineEnforcedByServer(t *testing.T) {
	lis := listenTCP(t)
	serve(t, lis, transport.ServerOptions{})
	r := rawDial(t, lis.Addr().String())
	start := time.Now()
	r.request(7, "/svclab.echo.Echo/Echo", 100*time.Millisecond, &echo.EchoRequest{SleepMicros: 10e6})
	id, st := r.response(new(echo.EchoResponse))
	took := time.Since(start)
	if id != 7 || st.Code() != codes.DeadlineExceeded {
		t.Fatalf("response to call %d: %v, want call 7 with DeadlineExceeded", id, st)
	}
	if took < 100*time.Millisecond || took > 2*time.Second {
		t.Errorf("answered after %v, want about 100ms", took)
	}
}

// TestOversized sends messages beyond MaxMessageSize both ways: each call
// fails with ResourceExhausted naming the limit, and the connection goes
// on serving.
func TestOversized(t *testing.T) {
	big := make([]byte, MaxMessageSize+1)
	lis := listenTCP(t)
	serve(t, lis, transport.ServerOptions{})
	c := echo.NewEchoClient(dial(t, lis.Addr().String(), transport.DialOptions{}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err := c.Echo(ctx, &echo.EchoRequest{Payload: big})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "MaxMessageSize") {
		t.Errorf("sending %d bytes: %v, want ResourceExhausted naming MaxMessageSize", len(big), err)
	}

	// A raw client is not stopped before sending, so the server must refuse.
	r := rawDial(t, lis.Addr().String())
	r.request(1, "/svclab.echo.Echo/Echo", 0, &echo.EchoRequest{Payload: big})
	id, st := r.response(new(echo.EchoResponse))
	if id != 1 || st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "exceeds the limit") {
		t.Errorf("server's answer to call %d of %d bytes: %v, want ResourceExhausted", id, len(big), st)
	}
	r.request(2, "/svclab.echo.Echo/Echo", 0, &echo.EchoRequest{Payload: []byte("next")})
	var resp echo.EchoResponse
	if id, st := r.response(&resp); id != 2 || st.Code() != codes.OK || string(resp.Payload) != "next" {
		t.Errorf("call after the oversized one: id %d, %v, %q", id, st, resp.Payload)
	}

	// A response too large to send: the reply says so instead. The request
	// fits; the interceptor makes the response grow past the limit.
	grow := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == "/svclab.echo.Echo/Echo" {
			return &echo.EchoResponse{Payload: big}, nil
		}
		return h(ctx, req)
	}
	lis2 := listenTCP(t)
	serve(t, lis2, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{grow}})
	c2 := echo.NewEchoClient(dial(t, lis2.Addr().String(), transport.DialOptions{}))
	_, err = c2.Echo(ctx, &echo.EchoRequest{})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "MaxMessageSize") {
		t.Errorf("response of %d bytes: %v, want ResourceExhausted naming MaxMessageSize", len(big), err)
	}
	if _, err := c2.Ping(ctx, &emptypb.Empty{}); err != nil {
		t.Errorf("call after the oversized response: %v", err)
	}
}

// TestGarbage feeds the server noise: random bytes, a valid preface then
// random frames, and frames with lying lengths. The server must close
// those connections (or answer them) without crashing, and go on serving
// a well-behaved client throughout.
func TestGarbage(t *testing.T) {
	lis := listenTCP(t)
	serve(t, lis, transport.ServerOptions{})
	c := echo.NewEchoClient(dial(t, lis.Addr().String(), transport.DialOptions{}))
	noise := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	// A header that claims more bytes than the frame has.
	lying := make([]byte, prefixLen)
	binary.BigEndian.PutUint32(lying, fixedLen+4)
	lying[8] = kindRequest
	binary.BigEndian.PutUint32(lying[9:], 100)
	// A request whose header is not protobuf.
	badHeader := make([]byte, prefixLen, prefixLen+5)
	badHeader = append(badHeader, 0xff, 0xff, 0xff, 0xff, 0xff)
	putPrefix(badHeader, 1, kindRequest, 5)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"noise", noise(4096)},
		{"preface then noise", append(preface[:], noise(4096)...)},
		{"wrong version", append([]byte("PRPC\x00\x00\x00\x09"), noise(64)...)},
		{"header longer than frame", append(preface[:], lying...)},
		{"header not protobuf", append(preface[:], badHeader...)},
		{"cut short", append(preface[:], lying[:5]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 {
				nc, err := net.Dial("tcp", lis.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				nc.Write(tc.data)
				nc.(*net.TCPConn).CloseWrite()
				// The server either closes or answers what parsed; it must
				// not hang on to the connection once the stream is bad.
				nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.Copy(io.Discard, nc); err != nil {
					t.Errorf("reading the server's side: %v", err)
				}
				nc.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Echo(ctx, &echo.EchoRequest{Payload: []byte("still here")}); err != nil {
				t.Fatalf("server stopped serving: %v", err)
			}
		})
	}
}

// TestMetadataBothWays sends metadata to the handler and gets the header
// and trailer it sets, with a status carrying details, back.
func TestMetadataBothWays(t *testing.T) {
	handler := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if err := grpc.SetHeader(ctx, metadata.Pairs("echo-header", strings.Join(md.Get("x-in"), ","))); err != nil {
			return nil, err
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs("echo-trailer-bin", "\x00\xff")); err != nil {
			return nil, err
		}
		if len(md.Get("x-fail")) > 0 {
			st, err := status.New(codes.FailedPrecondition, "asked to fail").WithDetails(durationpb.New(time.Second))
			if err != nil {
				return nil, err
			}
			return nil, st.Err()
		}
		return h(ctx, req)
	}
	lis := listenTCP(t)
	serve(t, lis, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{handler}})
	c := echo.NewEchoClient(dial(t, lis.Addr().String(), transport.DialOptions{}))
	for _, tc := range []struct {
		name     string
		md       metadata.MD
		wantCode codes.Code
	}{
		{"ok", metadata.Pairs("x-in", "a", "x-in", "b"), codes.OK},
		{"failed", metadata.Pairs("x-in", "c", "x-fail", "1"), codes.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := metadata.NewOutgoingContext(context.Background(), tc.md)
			var header, trailer metadata.MD
			_, err := c.Echo(ctx, &echo.EchoRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
			st := status.Convert(err)
			if st.Code() != tc.wantCode {
				t.Fatalf("got %v, want %v", err, tc.wantCode)
			}
			if got, want := header.Get("echo-header"), strings.Join(tc.md.Get("x-in"), ","); len(got) != 1 || got[0] != want {
				t.Errorf("header echo-header = %q, want [%q]", got, want)
			}
			if got := trailer.Get("echo-trailer-bin"); len(got) != 1 || got[0] != "\x00\xff" {
				t.Errorf("trailer echo-trailer-bin = %q, want the two bytes 00 ff", got)
			}
			if tc.wantCode != codes.OK {
				d := st.Details()
				if len(d) != 1 || !proto.Equal(d[0].(proto.Message), durationpb.New(time.Second)) {
					t.Errorf("details %v, want one Duration of 1s", d)
				}
			}
		})
	}
}
