package tracing_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/svclab/svclab/internal/runtime/middleware/tracing"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/proto/echo"
)

// collector is an OTLP/gRPC trace receiver that counts the spans it gets
// and keeps none, so that a benchmark pays for the real exporter (batching,
// protobuf encoding, the gRPC call) and not for a backend's storage.
type collector struct {
	collectorpb.UnimplementedTraceServiceServer
	spans atomic.Int64
}

func (c *collector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// discardExporter counts the spans of every batch and drops them: the
// SDK's batching without an export.
type discardExporter struct{ spans atomic.Int64 }

func (d *discardExporter) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	d.spans.Add(int64(len(s)))
	return nil
}
func (*discardExporter) Shutdown(context.Context) error { return nil }

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCollector(b *testing.B) (*collector, string) {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	c := &collector{}
	srv := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(srv, c)
	go srv.Serve(lis)
	b.Cleanup(srv.Stop)
	return c, lis.Addr().String()
}

// BenchmarkHop is one grpc hop (over a unix socket, as in a host) without
// tracing and with every call traced: a client and a server span, batched
// and exported over OTLP/gRPC to a collector in the same process. The
// difference is what tracing costs a hop's CPU, spans and export included
// (and the collector's decoding, which Jaeger would do on the same cores):
// cpu-ns/op is the process's CPU time per call, which other work on the
// machine does not inflate as it does ns/op. Run with -count and compare
// with benchstat, or -cpuprofile for where it goes.
func BenchmarkHop(b *testing.B) {
	for _, tc := range []struct {
		name    string
		ratio   float64 // 0: no tracer
		discard bool    // spans batched, then dropped instead of exported
	}{
		{"off", 0, false},
		// Propagation and a sampler saying no: what any ratio pays on the
		// calls it does not record.
		{"unsampled", 1e-12, false},
		// Recording and batching, no export: the on-path share.
		{"discard", 1, true},
		{"on", 1, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var sopts transport.ServerOptions
			var dopts transport.DialOptions
			var tr *tracing.Tracer
			var col *collector
			var discard *discardExporter
			traced := tc.ratio > 0
			if traced {
				var addr string
				col, addr = startCollector(b)
				opts := tracing.Options{Service: "bench", Deployment: "b1", Ratio: tc.ratio, Endpoint: addr}
				if tc.discard {
					discard = &discardExporter{}
					opts.Exporter = discard
				}
				var err error
				tr, err = tracing.New(context.Background(), opts)
				if err != nil {
					b.Fatal(err)
				}
				sopts.Interceptors = []grpc.UnaryServerInterceptor{tr.Server("echo")}
				dopts.Interceptors = []grpc.UnaryClientInterceptor{tr.Client("echo")}
			}
			tp, err := transport.Lookup("grpc")
			if err != nil {
				b.Fatal(err)
			}
			srv := tp.NewServer(sopts)
			echo.RegisterEchoServer(srv, echo.Service{})
			dir, err := os.MkdirTemp("", "svclab-tracing-bench")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			lis, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(lis)
			defer srv.Stop()
			cc, err := tp.Dial(context.Background(), "unix", lis.Addr().String(), dopts)
			if err != nil {
				b.Fatal(err)
			}
			defer cc.Close()
			c := echo.NewEchoClient(cc)
			req := &echo.EchoRequest{Payload: make([]byte, 100)}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for range b.N {
				if _, err := c.Echo(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			if tr != nil {
				// The spans' export is part of the cost.
				if err := tr.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time, unlike ns/op, holds on a machine other work loads.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.StopTimer()
			if tr != nil {
				if err := tr.Shutdown(ctx); err != nil {
					b.Fatal(err)
				}
				// None dropped: every call's two spans reached the collector,
				// or the discarding exporter; none when unsampled.
				got := col.spans.Load()
				if discard != nil {
					got = discard.spans.Load()
				}
				want := 2 * int64(b.N)
				if tc.ratio < 1 {
					want = 0
				}
				if got != want {
					b.Fatalf("%s: exported %d spans, want %d", tc.name, got, want)
				}
			}
		})
	}
}

// BenchmarkInterceptors is the tracing a hop puts on its request path,
// without the wire: a client interceptor whose invoker hands the outgoing
// trace context to a server interceptor, as a hop's two ends do, with
// every call sampled and its two spans batched and dropped. It is the
// floor under what tracing adds to a hop's latency: the OpenTelemetry
// SDK's span start and end, W3C propagation and the batcher's enqueue.
func BenchmarkInterceptors(b *testing.B) {
	for _, tc := range []struct {
		name  string
		ratio float64
	}{{"unsampled", 1e-12}, {"sampled", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			discard := &discardExporter{}
			tr, err := tracing.New(context.Background(), tracing.Options{Service: "bench", Deployment: "b1", Ratio: tc.ratio, Exporter: discard})
			if err != nil {
				b.Fatal(err)
			}
			server := tr.Server("echo")
			client := tr.Client("echo")
			info := &grpc.UnaryServerInfo{FullMethod: "/svclab.echo.Echo/Echo"}
			handler := func(ctx context.Context, req any) (any, error) { return req, nil }
			invoker := func(ctx context.Context, method string, req, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				// The server's side sees what the client sent as incoming
				// metadata, as every transport delivers it.
				md, _ := metadata.FromOutgoingContext(ctx)
				_, err := server(metadata.NewIncomingContext(context.Background(), md), req, info, handler)
				return err
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := client(ctx, info.FullMethod, nil, nil, nil, invoker); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := tr.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			// Every span sampled reached the batcher, but for the few it
			// drops when this loop outruns its export goroutine and fills
			// its queue (2,048 spans), as a run's trace check would count.
			want := 2 * int64(b.N)
			if tc.ratio < 1 {
				want = 0
			}
			if got := discard.spans.Load(); got > want || float64(got) < 0.98*float64(want) {
				b.Fatalf("%d spans batched, want %d", got, want)
			}
		})
	}
}
