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
		b.Run(size.name, func(b *testing.B) {
			c := benchClient(b)
			req := &echo.EchoRequest{Payload: make([]byte, size.n)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Echo(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEchoParallel is 100-byte echo calls from 32 callers per CPU
// sharing one connection.
func BenchmarkEchoParallel(b *testing.B) {
	c := benchClient(b)
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

// benchClient serves the echo service on loopback TCP and dials it.
func benchClient(b *testing.B) echo.EchoClient {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := NewServer(transport.ServerOptions{})
	echo.RegisterEchoServer(s, echo.Service{})
	go s.Serve(lis)
	b.Cleanup(s.Stop)
	conn, err := Dial(context.Background(), "tcp", lis.Addr().String(), transport.DialOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return echo.NewEchoClient(conn)
}
