package protorpctransport

import (
	"context"
	"net"
	"testing"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/proto/echo"
)

// BenchmarkEcho is one echo call in flight over loopback TCP, for
// profiling the transport alone; internal/runtime/transport/all has the
// comparison with the network floor.
func BenchmarkEcho(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"100B", 100}, {"100KB", 100 << 10}} {
		b.Run(size.name, func(b *testing.B) { benchEcho(b, size.n) })
	}
}

func benchEcho(b *testing.B, size int) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := NewServer(transport.ServerOptions{})
	echo.RegisterEchoServer(s, echo.Service{})
	go s.Serve(lis)
	defer s.Stop()
	conn, err := Dial(context.Background(), "tcp", lis.Addr().String(), transport.DialOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := echo.NewEchoClient(conn)
	req := &echo.EchoRequest{Payload: make([]byte, size)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Echo(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEchoParallel is many 100-byte echo calls in flight on one
// connection.
func BenchmarkEchoParallel(b *testing.B) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := NewServer(transport.ServerOptions{})
	echo.RegisterEchoServer(s, echo.Service{})
	go s.Serve(lis)
	defer s.Stop()
	conn, err := Dial(context.Background(), "tcp", lis.Addr().String(), transport.DialOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := echo.NewEchoClient(conn)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		req := &echo.EchoRequest{Payload: make([]byte, 100)}
		ctx := context.Background()
		for pb.Next() {
			if _, err := c.Echo(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
