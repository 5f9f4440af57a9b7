package inproc_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	"github.com/svclab/svclab/proto/echo"
)

func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return strings.Fields(string(buf))[1]
}

// spy records where and with what it was called.
type spy struct {
	echo.UnimplementedEchoServer
	goroutine string
	got       *echo.EchoRequest
}

func (s *spy) Echo(ctx context.Context, in *echo.EchoRequest) (*echo.EchoResponse, error) {
	s.goroutine, s.got = goroutineID(), in
	return &echo.EchoResponse{Payload: in.Payload}, nil
}

// TestDirectCall covers both paths: the typed one generated code
// registers, where the implementation gets the caller's request itself, and
// the handler path of a service without generated methods (here a copy of
// the descriptor), where it gets a shallow copy, as after a decode. Both
// run on the caller's goroutine and pass nested values by reference.
func TestDirectCall(t *testing.T) {
	copied := echo.Echo_ServiceDesc
	for _, tc := range []struct {
		name    string
		desc    *grpc.ServiceDesc
		sameReq bool
	}{
		{"typed", &echo.Echo_ServiceDesc, true},
		{"handler", &copied, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
			s := &spy{}
			ch.RegisterService(tc.desc, s)
			p := []byte("by reference")
			req := &echo.EchoRequest{Payload: p}
			resp, err := echo.NewEchoClient(ch).Echo(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if s.goroutine != goroutineID() {
				t.Errorf("handler ran on goroutine %s, caller is %s", s.goroutine, goroutineID())
			}
			if &s.got.Payload[0] != &p[0] || &resp.Payload[0] != &p[0] {
				t.Error("payload was copied, want it passed by reference")
			}
			if (s.got == req) != tc.sameReq {
				t.Errorf("handler received the caller's request struct: %v, want %v", s.got == req, tc.sameReq)
			}
			if !bytes.Equal(resp.Payload, p) {
				t.Errorf("payload %q", resp.Payload)
			}
		})
	}
}

// TestTypedPathErrors: what grpc reports as a failed decode or encode is
// a codes.Internal error on the typed path, never a panic.
func TestTypedPathErrors(t *testing.T) {
	swapRequest := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(ctx, method, &echo.Point{}, reply, cc, opts...)
	}
	swapResponse := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return &echo.Point{}, nil
	}
	for _, tc := range []struct {
		name string
		sopt transport.ServerOptions
		dopt transport.DialOptions
		impl echo.EchoServer
		want string
	}{
		{"request of another type", transport.ServerOptions{}, transport.DialOptions{Interceptors: []grpc.UnaryClientInterceptor{swapRequest}}, echo.Service{}, "cannot pass a *echo.Point as a *echo.EchoRequest"},
		{"response of another type", transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{swapResponse}}, transport.DialOptions{}, echo.Service{}, "cannot pass a *echo.Point as a *echo.EchoResponse"},
		{"nil response", transport.ServerOptions{}, transport.DialOptions{}, nilEcho{}, "/svclab.echo.Echo/Echo returned a nil response and no error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := inproc.New(tc.sopt, tc.dopt)
			echo.RegisterEchoServer(ch, tc.impl)
			_, err := echo.NewEchoClient(ch).Echo(context.Background(), &echo.EchoRequest{})
			if status.Code(err) != codes.Internal || !strings.Contains(status.Convert(err).Message(), tc.want) {
				t.Errorf("got %v, want Internal: ...%s", err, tc.want)
			}
		})
	}
}

type nilEcho struct{ echo.UnimplementedEchoServer }

func (nilEcho) Echo(context.Context, *echo.EchoRequest) (*echo.EchoResponse, error) { return nil, nil }

// TestTypedPathInterceptors: server interceptors wrap the typed call with
// the same info a grpc.Server gives them, and see the caller's metadata as
// incoming.
func TestTypedPathInterceptors(t *testing.T) {
	var gotInfo grpc.UnaryServerInfo
	var gotMD []string
	impl := echo.Service{}
	ch := inproc.New(transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			gotInfo = *info
			md, _ := metadata.FromIncomingContext(ctx)
			gotMD = md.Get("x-who")
			return h(ctx, req)
		},
	}}, transport.DialOptions{})
	echo.RegisterEchoServer(ch, impl)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-who", "caller")
	resp, err := echo.NewEchoClient(ch).Echo(ctx, &echo.EchoRequest{Payload: []byte("x")})
	if err != nil || string(resp.Payload) != "x" {
		t.Fatalf("Echo = %v, %v", resp, err)
	}
	if gotInfo.FullMethod != echo.Echo_Echo_FullMethodName || gotInfo.Server != any(impl) {
		t.Errorf("interceptor saw info %+v", gotInfo)
	}
	if len(gotMD) != 1 || gotMD[0] != "caller" {
		t.Errorf("interceptor saw incoming x-who %q, want [caller]", gotMD)
	}
}

func TestStreamsUnimplemented(t *testing.T) {
	ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
	_, err := ch.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/x.Y/Z")
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("got %v, want Unimplemented", err)
	}
}

func TestPlainErrorsBecomeStatuses(t *testing.T) {
	ch := inproc.New(transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if req.(*echo.EchoRequest).FailCode == 1 {
				return nil, context.DeadlineExceeded
			}
			return nil, errPlain
		},
	}}, transport.DialOptions{})
	echo.RegisterEchoServer(ch, echo.Service{})
	c := echo.NewEchoClient(ch)
	if _, err := c.Echo(context.Background(), &echo.EchoRequest{}); status.Code(err) != codes.Unknown || status.Convert(err).Message() != errPlain.Error() {
		t.Errorf("plain error came back as %v, want Unknown with its text", err)
	}
	if _, err := c.Echo(context.Background(), &echo.EchoRequest{FailCode: 1}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("context error came back as %v, want DeadlineExceeded", err)
	}
}

var errPlain = plainError("plain")

type plainError string

func (e plainError) Error() string { return string(e) }

// TestAllocations pins the cost of a call on the typed path to the three
// allocations svclab cannot avoid: the generated stub's call-option slice
// and response, and the implementation's response. A new allocation on
// this path shows up here first.
func TestAllocations(t *testing.T) {
	ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
	echo.RegisterEchoServer(ch, echo.Service{})
	c := echo.NewEchoClient(ch)
	req := &echo.EchoRequest{Payload: make([]byte, 100)}
	ctx := context.Background()
	call := func() {
		if _, err := c.Echo(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// Ping's response is an emptypb.Empty, copied by reflection: still
	// the same three allocations.
	ping := func() {
		if _, err := c.Ping(ctx, &emptypb.Empty{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		f    func()
		max  float64
	}{
		{"one method", call, 3},
		// Alternating methods miss the last-method cache every time; a
		// miss must not allocate. Ping's own request adds one.
		{"alternating methods", func() { call(); ping() }, 3 + 4},
	} {
		if n := testing.AllocsPerRun(1000, tc.f); n > tc.max {
			t.Errorf("%s: %v allocations, want at most %v", tc.name, n, tc.max)
		}
	}
}

// BenchmarkStub is a call through the generated stub; BenchmarkDirect
// calls the implementation as a plain method, for the floor.
func BenchmarkStub(b *testing.B) {
	ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
	echo.RegisterEchoServer(ch, echo.Service{})
	c := echo.NewEchoClient(ch)
	req := &echo.EchoRequest{Payload: make([]byte, 100)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Echo(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDirect(b *testing.B) {
	var s echo.EchoServer = echo.Service{}
	req := &echo.EchoRequest{Payload: make([]byte, 100)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Echo(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
