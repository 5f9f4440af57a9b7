package all_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/proto/echo"
)

// fixture is one transport on one network, ready to start servers.
type fixture struct {
	name    string // transport/network
	network string
	tr      transport.Transport
}

func fixtures(t testing.TB) []fixture {
	var fs []fixture
	for _, n := range transport.Names() {
		tr, err := transport.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, nw := range tr.Networks() {
			fs = append(fs, fixture{name: n + "/" + nw, network: nw, tr: tr})
		}
	}
	fs = append(fs, inprocFixtures()...)
	return fs
}

// listen opens a loopback listener on the fixture's network.
func listen(t testing.TB, network string) net.Listener {
	t.Helper()
	switch network {
	case "tcp":
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return lis
	case "unix":
		// Short path: sun_path holds 108 bytes, t.TempDir can exceed it.
		dir, err := os.MkdirTemp("", "svclab")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		lis, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
		if err != nil {
			t.Fatal(err)
		}
		return lis
	default:
		t.Fatalf("no listener for network %q", network)
		return nil
	}
}

// running is a started server and a client connected to it.
type running struct {
	srv    transport.Server
	conn   transport.Conn
	served chan error // Serve's result
	stop   sync.Once
}

func (r *running) Stop(t testing.TB) {
	r.stop.Do(func() {
		r.conn.Close()
		r.srv.Stop()
		select {
		case err := <-r.served:
			if err != nil {
				t.Errorf("Serve returned %v after Stop, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return within 5s of Stop")
		}
	})
}

// start serves the registered services on f and dials them.
func (f fixture) start(t testing.TB, sopts transport.ServerOptions, dopts transport.DialOptions, register func(grpc.ServiceRegistrar)) *running {
	t.Helper()
	if f.tr == nil {
		return startInproc(t, sopts, dopts, register)
	}
	srv := f.tr.NewServer(sopts)
	register(srv)
	lis := listen(t, f.network)
	r := &running{srv: srv, served: make(chan error, 1)}
	go func() { r.served <- srv.Serve(lis) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := f.tr.Dial(ctx, f.network, lis.Addr().String(), dopts)
	if err != nil {
		srv.Stop()
		t.Fatalf("dial: %v", err)
	}
	r.conn = conn
	t.Cleanup(func() { r.Stop(t) })
	return r
}

func registerEcho(s grpc.ServiceRegistrar) { echo.RegisterEchoServer(s, echo.Service{}) }

func payload(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			r := f.start(t, transport.ServerOptions{}, transport.DialOptions{}, registerEcho)
			c := echo.NewEchoClient(r.conn)
			for _, size := range []int{0, 100, 100 << 10, 1 << 20} {
				p := payload(size)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := c.Echo(ctx, &echo.EchoRequest{Payload: p})
				cancel()
				if err != nil {
					t.Fatalf("%d bytes: %v", size, err)
				}
				if !bytes.Equal(resp.Payload, p) {
					t.Fatalf("%d bytes: got %d bytes back, not equal to what was sent", size, len(resp.Payload))
				}
			}
		})
	}
}

func TestStatusCodes(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			r := f.start(t, transport.ServerOptions{}, transport.DialOptions{}, registerEcho)
			c := echo.NewEchoClient(r.conn)
			for _, code := range []codes.Code{
				codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
				codes.ResourceExhausted, codes.FailedPrecondition, codes.Aborted, codes.OutOfRange,
				codes.Unimplemented, codes.Internal, codes.Unavailable, codes.DataLoss,
				codes.Unauthenticated, codes.Unknown,
			} {
				_, err := c.Echo(context.Background(), &echo.EchoRequest{FailCode: int32(code)})
				st, ok := status.FromError(err)
				if !ok || st.Code() != code {
					t.Errorf("fail_code %s: got error %v, want code %s", code, err, code)
					continue
				}
				if want := "failing with " + code.String(); !strings.Contains(st.Message(), want) {
					t.Errorf("fail_code %s: message %q lacks %q", code, st.Message(), want)
				}
			}
		})
	}
}

func TestUnknownMethod(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			r := f.start(t, transport.ServerOptions{}, transport.DialOptions{}, registerEcho)
			err := r.conn.Invoke(context.Background(), "/svclab.echo.Echo/NoSuchMethod", &echo.EchoRequest{}, &echo.EchoResponse{})
			if status.Code(err) != codes.Unimplemented {
				t.Fatalf("got %v, want Unimplemented", err)
			}
		})
	}
}

// outcome records what a server-side interceptor saw of one call.
type outcome struct {
	deadline    time.Time
	hasDeadline bool
	err         error
	returned    time.Time
}

func recordOutcomes(ch chan<- outcome) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var o outcome
		o.deadline, o.hasDeadline = ctx.Deadline()
		resp, err := handler(ctx, req)
		o.err, o.returned = err, time.Now()
		select {
		case ch <- o:
		default:
		}
		return resp, err
	}
}

func TestDeadline(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			seen := make(chan outcome, 1)
			r := f.start(t, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{recordOutcomes(seen)}}, transport.DialOptions{}, registerEcho)
			c := echo.NewEchoClient(r.conn)

			// The deadline the client sets is the one the server sees.
			want := time.Now().Add(3 * time.Second)
			ctx, cancel := context.WithDeadline(context.Background(), want)
			if _, err := c.Echo(ctx, &echo.EchoRequest{}); err != nil {
				t.Fatal(err)
			}
			cancel()
			o := <-seen
			if !o.hasDeadline {
				t.Fatal("server saw no deadline")
			}
			// The timeout travels relative, as grpc-timeout does, so the
			// server's deadline is the client's plus the time in transit
			// (long under -race on a busy machine), never earlier.
			if d := o.deadline.Sub(want); d > 250*time.Millisecond || d < -time.Millisecond {
				t.Errorf("server deadline is %v off the client's", d)
			}

			// A handler that outlives the deadline ends with it, on both sides.
			start := time.Now()
			ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := c.Echo(ctx, &echo.EchoRequest{SleepMicros: 10e6})
			took := time.Since(start)
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("got %v, want DeadlineExceeded", err)
			}
			if took > time.Second {
				t.Errorf("client returned after %v, want about 100ms", took)
			}
			select {
			case o := <-seen:
				// A client may give up and reset the call a moment before the
				// server's own timer fires (grpc-go does), so Canceled is as
				// good: what matters is that the handler ended promptly.
				if c := status.Code(o.err); c != codes.DeadlineExceeded && c != codes.Canceled {
					t.Errorf("server handler ended with %v, want DeadlineExceeded", o.err)
				}
				if d := o.returned.Sub(start); d > time.Second {
					t.Errorf("server handler ran %v, want about 100ms", d)
				}
			case <-time.After(2 * time.Second):
				t.Error("server handler still running 2s after the deadline")
			}
		})
	}
}

func TestCancel(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			seen := make(chan outcome, 1)
			r := f.start(t, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{recordOutcomes(seen)}}, transport.DialOptions{}, registerEcho)
			c := echo.NewEchoClient(r.conn)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := c.Echo(ctx, &echo.EchoRequest{SleepMicros: 10e6})
			if status.Code(err) != codes.Canceled {
				t.Fatalf("got %v, want Canceled", err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("client returned after %v, want about 100ms", took)
			}
			select {
			case o := <-seen:
				if c := status.Code(o.err); c != codes.Canceled {
					t.Errorf("server handler ended with %v, want Canceled", o.err)
				}
			case <-time.After(2 * time.Second):
				t.Error("server handler still running 2s after the client cancelled")
			}
			// The connection still serves calls after a cancelled one.
			if _, err := c.Echo(context.Background(), &echo.EchoRequest{Payload: []byte("after")}); err != nil {
				t.Errorf("call after cancel: %v", err)
			}
		})
	}
}

func TestConcurrent(t *testing.T) {
	const n = 50
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			// Every call holds its handler until all have arrived, so the 50
			// are in flight at once, not merely issued from 50 goroutines.
			var arrived sync.WaitGroup
			arrived.Add(n)
			allIn := make(chan struct{})
			go func() { arrived.Wait(); close(allIn) }()
			barrier := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				arrived.Done()
				select {
				case <-allIn:
				case <-ctx.Done():
					return nil, status.FromContextError(ctx.Err()).Err()
				}
				return h(ctx, req)
			}
			r := f.start(t, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{barrier}}, transport.DialOptions{}, registerEcho)
			c := echo.NewEchoClient(r.conn)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := []byte(fmt.Sprintf("call %d %s", i, strings.Repeat("x", i*100)))
					resp, err := c.Echo(ctx, &echo.EchoRequest{Payload: p})
					if err != nil {
						errs <- fmt.Errorf("call %d: %w", i, err)
						return
					}
					if !bytes.Equal(resp.Payload, p) {
						errs <- fmt.Errorf("call %d: got another call's payload %.10q", i, resp.Payload)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestInterceptors(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			var mu sync.Mutex
			var trail []string
			note := func(s string) { mu.Lock(); trail = append(trail, s); mu.Unlock() }
			client := func(tag string) grpc.UnaryClientInterceptor {
				return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					note("client " + tag + " " + method)
					ctx = metadata.AppendToOutgoingContext(ctx, "x-hop-"+tag, tag)
					return invoker(ctx, method, req, reply, cc, opts...)
				}
			}
			server := func(tag string) grpc.UnaryServerInterceptor {
				return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
					md, _ := metadata.FromIncomingContext(ctx)
					note(fmt.Sprintf("server %s %s a=%v b=%v", tag, info.FullMethod, md.Get("x-hop-a"), md.Get("x-hop-b")))
					if _, ok := req.(*echo.EchoRequest); !ok {
						return nil, status.Errorf(codes.Internal, "interceptor got a %T", req)
					}
					resp, err := h(ctx, req)
					if err == nil {
						resp.(*echo.EchoResponse).Payload = append([]byte(tag), resp.(*echo.EchoResponse).Payload...)
					}
					return resp, err
				}
			}
			r := f.start(t,
				transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{server("1"), server("2")}},
				transport.DialOptions{Interceptors: []grpc.UnaryClientInterceptor{client("a"), client("b")}},
				registerEcho)
			resp, err := echo.NewEchoClient(r.conn).Echo(context.Background(), &echo.EchoRequest{Payload: []byte("!")})
			if err != nil {
				t.Fatal(err)
			}
			// The outer server interceptor wraps the inner one's result.
			if got := string(resp.Payload); got != "12!" {
				t.Errorf("payload %q, want %q", got, "12!")
			}
			want := []string{
				"client a /svclab.echo.Echo/Echo",
				"client b /svclab.echo.Echo/Echo",
				"server 1 /svclab.echo.Echo/Echo a=[a] b=[b]",
				"server 2 /svclab.echo.Echo/Echo a=[a] b=[b]",
			}
			if strings.Join(trail, "\n") != strings.Join(want, "\n") {
				t.Errorf("interceptors ran as\n%s\nwant\n%s", strings.Join(trail, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestHealth(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			hs := health.NewServer()
			hs.SetServingStatus("svclab.echo.Echo", healthpb.HealthCheckResponse_NOT_SERVING)
			r := f.start(t, transport.ServerOptions{}, transport.DialOptions{}, func(s grpc.ServiceRegistrar) {
				registerEcho(s)
				healthpb.RegisterHealthServer(s, hs)
			})
			hc := healthpb.NewHealthClient(r.conn)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for _, tc := range []struct {
				service string
				want    healthpb.HealthCheckResponse_ServingStatus
			}{
				{"", healthpb.HealthCheckResponse_SERVING},
				{"svclab.echo.Echo", healthpb.HealthCheckResponse_NOT_SERVING},
			} {
				resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: tc.service})
				if err != nil {
					t.Fatalf("check %q: %v", tc.service, err)
				}
				if resp.Status != tc.want {
					t.Errorf("check %q: %v, want %v", tc.service, resp.Status, tc.want)
				}
			}
			if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
				t.Errorf("check of an unknown service: %v, want NotFound", err)
			}
		})
	}
}

func TestStopUnblocks(t *testing.T) {
	for _, f := range fixtures(t) {
		if f.tr == nil {
			continue // an inproc call runs on the caller's goroutine; there is no server to stop
		}
		t.Run(f.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			entered := make(chan struct{}, 1)
			signal := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				entered <- struct{}{}
				return h(ctx, req)
			}
			r := f.start(t, transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{signal}}, transport.DialOptions{}, registerEcho)
			c := echo.NewEchoClient(r.conn)
			done := make(chan error, 1)
			go func() {
				_, err := c.Echo(context.Background(), &echo.EchoRequest{SleepMicros: 30e6})
				done <- err
			}()
			select {
			case <-entered:
			case <-time.After(5 * time.Second):
				t.Fatal("call never reached the server")
			}
			r.srv.Stop()
			select {
			case err := <-done:
				if err == nil {
					t.Error("call in flight at Stop succeeded")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("call in flight still blocked 5s after Stop")
			}
			r.Stop(t)
			// Everything the server and client started winds down.
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines before, %d 5s after Stop:\n%s", before, n, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

func TestTLS(t *testing.T) {
	server, client := tlsConfigs(t)
	for _, f := range fixtures(t) {
		if f.tr == nil {
			continue // nothing on a wire to encrypt
		}
		t.Run(f.name, func(t *testing.T) {
			r := f.start(t, transport.ServerOptions{TLS: server}, transport.DialOptions{TLS: client}, registerEcho)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := echo.NewEchoClient(r.conn).Echo(ctx, &echo.EchoRequest{Payload: []byte("secret")})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Payload) != "secret" {
				t.Fatalf("payload %q", resp.Payload)
			}

			// A plaintext client cannot talk to the TLS server, which shows
			// TLS is in force rather than ignored.
			lis := listen(t, f.network)
			srv := f.tr.NewServer(transport.ServerOptions{TLS: server})
			registerEcho(srv)
			go srv.Serve(lis)
			defer srv.Stop()
			plain, err := f.tr.Dial(ctx, f.network, lis.Addr().String(), transport.DialOptions{})
			if err != nil {
				return // refusing at dial is as good
			}
			defer plain.Close()
			ctx2, cancel2 := context.WithTimeout(ctx, time.Second)
			defer cancel2()
			if _, err := echo.NewEchoClient(plain).Echo(ctx2, &echo.EchoRequest{Payload: []byte("x")}); err == nil {
				t.Error("a plaintext client got an answer from a TLS server")
			}
		})
	}
}

// tlsConfigs makes a self-signed certificate for localhost and the server
// and client configs that trust it.
func tlsConfigs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}}
	client = &tls.Config{RootCAs: pool, ServerName: "localhost"}
	return server, client
}

// TestMessageShapes sends messages with no fields and with oneofs, maps,
// lists and nesting, which encodings other than protobuf (gob, JSON) must
// each handle.
func TestMessageShapes(t *testing.T) {
	v, err := structpb.NewValue(map[string]any{
		"name":   "svclab",
		"n":      42.5,
		"ok":     true,
		"none":   nil,
		"list":   []any{1.0, "two", []any{}, map[string]any{"deep": []any{false}}},
		"nested": map[string]any{"empty": map[string]any{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			r := f.start(t, transport.ServerOptions{}, transport.DialOptions{}, registerEcho)
			c := echo.NewEchoClient(r.conn)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Ping(ctx, &emptypb.Empty{}); err != nil {
				t.Errorf("Ping: %v", err)
			}
			got, err := c.Reflect(ctx, v)
			if err != nil {
				t.Fatalf("Reflect: %v", err)
			}
			if !proto.Equal(got, v) {
				t.Errorf("Reflect returned\n%v\nwant\n%v", got, v)
			}
			for _, s := range shapes() {
				got, err := c.Mirror(ctx, s)
				if err != nil {
					t.Fatalf("Mirror(%v): %v", s, err)
				}
				want := s
				if f.tr != nil && f.tr.Name() == "netrpc" && s.Count != nil && *s.Count == 0 {
					// gob flattens pointers: an optional set to zero
					// arrives unset, as the package documents.
					want = proto.CloneOf(s)
					want.Count = nil
				}
				if !proto.Equal(got, want) {
					t.Errorf("Mirror returned\n%v\nwant\n%v", got, want)
				}
			}
		})
	}
}

// shapes are Shape messages that together set every field: both members
// of the oneof, an optional set to zero and one left unset.
func shapes() []*echo.Shape {
	pt := func(x, y int32) *echo.Point { return &echo.Point{X: x, Y: y} }
	return []*echo.Shape{
		{
			Name:   "circle",
			Count:  proto.Int64(0),
			Kind:   echo.Shape_KIND_CIRCLE,
			Size:   &echo.Shape_Radius{Radius: 2.5},
			Points: []*echo.Point{pt(1, 2), pt(3, 4)},
			Labels: map[string]*echo.Point{"centre": pt(5, 6)},
			Blob:   []byte{0, 1, 2},
		},
		{
			Name:   "polygon",
			Count:  proto.Int64(7),
			Kind:   echo.Shape_KIND_POLYGON,
			Size:   &echo.Shape_Corner{Corner: pt(-1, 9)},
			Points: []*echo.Point{pt(7, 8)},
		},
		{Name: "bare"},
	}
}

// TestReconnect restarts the server on the same address: the client must
// recover without being dialled again, as a deployer restarting a process
// expects.
func TestReconnect(t *testing.T) {
	for _, f := range fixtures(t) {
		if f.tr == nil {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			lis := listen(t, f.network)
			addr := lis.Addr().String()
			serve := func(lis net.Listener) transport.Server {
				srv := f.tr.NewServer(transport.ServerOptions{})
				registerEcho(srv)
				go srv.Serve(lis)
				return srv
			}
			srv := serve(lis)
			conn, err := f.tr.Dial(context.Background(), f.network, addr, transport.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := echo.NewEchoClient(conn)
			if _, err := c.Echo(context.Background(), &echo.EchoRequest{}); err != nil {
				t.Fatal(err)
			}
			srv.Stop()
			if f.network == "unix" {
				os.Remove(addr)
			}
			// A call while the server is down fails, and says why.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			_, err = c.Echo(ctx, &echo.EchoRequest{})
			cancel()
			if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
				t.Errorf("call with the server down: %v, want Unavailable (or DeadlineExceeded)", err)
			}
			lis2, err := net.Listen(f.network, addr)
			if err != nil {
				t.Fatal(err)
			}
			srv = serve(lis2)
			defer srv.Stop()
			deadline := time.Now().Add(10 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := c.Echo(ctx, &echo.EchoRequest{Payload: []byte("back")})
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no successful call within 10s of the restart: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
