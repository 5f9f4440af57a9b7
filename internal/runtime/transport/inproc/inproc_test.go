package inproc_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

func TestDirectCall(t *testing.T) {
	ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
	s := &spy{}
	echo.RegisterEchoServer(ch, s)
	p := []byte("by reference")
	req := &echo.EchoRequest{Payload: p, SleepMicros: 0}
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
	// The top-level struct is the handler's own, as after a real decode.
	if s.got == req {
		t.Error("handler received the caller's request struct itself")
	}
	if !bytes.Equal(resp.Payload, p) {
		t.Errorf("payload %q", resp.Payload)
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

// TestAllocations pins the cost of a call: the stub's call-option slice and
// response, the handler's request, the implementation's response, and the
// dec closure. A new allocation on this path shows up here first.
func TestAllocations(t *testing.T) {
	ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
	echo.RegisterEchoServer(ch, echo.Service{})
	c := echo.NewEchoClient(ch)
	req := &echo.EchoRequest{Payload: make([]byte, 100)}
	ctx := context.Background()
	n := testing.AllocsPerRun(1000, func() {
		if _, err := c.Echo(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	if n > 5 {
		t.Errorf("%v allocations per call, want at most 5", n)
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
