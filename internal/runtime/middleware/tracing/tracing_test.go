package tracing_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/svclab/svclab/internal/runtime/middleware/tracing"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	"github.com/svclab/svclab/proto/echo"
)

func newTracer(t *testing.T, ratio float64) (*tracing.Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(context.Background(), tracing.Options{Service: "test", Deployment: "d1", Ratio: ratio, Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

// conn serves echo on transport name with the tracer's interceptors and
// dials it; inproc when name is inproc.Name.
func conn(t *testing.T, name string, tr *tracing.Tracer, server grpc.UnaryServerInterceptor) grpc.ClientConnInterface {
	t.Helper()
	sopts := transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{tr.Server("echo"), server}}
	dopts := transport.DialOptions{Interceptors: []grpc.UnaryClientInterceptor{tr.Client("echo")}}
	if name == inproc.Name {
		ch := inproc.New(sopts, dopts)
		echo.RegisterEchoServer(ch, echo.Service{})
		return ch
	}
	tp, err := transport.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	srv := tp.NewServer(sopts)
	echo.RegisterEchoServer(srv, echo.Service{})
	dir, err := os.MkdirTemp("", "svclab-tracing")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	lis, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	c, err := tp.Dial(context.Background(), "unix", lis.Addr().String(), dopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPropagation checks, on every transport and inproc, that a call makes
// a client span and a server span of the same trace, the server's a child
// of the client's, and that the server's handler sees W3C trace context
// in its incoming metadata next to the caller's own metadata.
func TestPropagation(t *testing.T) {
	for _, name := range append(transport.Names(), inproc.Name) {
		t.Run(name, func(t *testing.T) {
			tr, exp := newTracer(t, 1)
			var seen metadata.MD
			capture := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				seen, _ = metadata.FromIncomingContext(ctx)
				return h(ctx, req)
			}
			c := echo.NewEchoClient(conn(t, name, tr, capture))
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user", "ada")
			if _, err := c.Echo(ctx, &echo.EchoRequest{Payload: []byte("hi")}); err != nil {
				t.Fatal(err)
			}
			if err := tr.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans := exp.GetSpans()
			if len(spans) != 2 {
				t.Fatalf("%d spans, want a client and a server span", len(spans))
			}
			var client, server tracetest.SpanStub
			for _, s := range spans {
				switch s.SpanKind {
				case trace.SpanKindClient:
					client = s
				case trace.SpanKindServer:
					server = s
				}
			}
			if !client.SpanContext.IsValid() || !server.SpanContext.IsValid() {
				t.Fatalf("want one span of each kind, got %+v", spans)
			}
			if server.SpanContext.TraceID() != client.SpanContext.TraceID() || server.Parent.SpanID() != client.SpanContext.SpanID() || !server.Parent.IsRemote() {
				t.Errorf("server span (trace %s, parent %s) is not the remote child of the client span (trace %s, span %s)",
					server.SpanContext.TraceID(), server.Parent.SpanID(), client.SpanContext.TraceID(), client.SpanContext.SpanID())
			}
			if server.Name != "svclab.echo.Echo/Echo" {
				t.Errorf("server span named %q", server.Name)
			}
			tp := seen.Get("traceparent")
			want := "00-" + client.SpanContext.TraceID().String() + "-" + client.SpanContext.SpanID().String() + "-01"
			if len(tp) != 1 || tp[0] != want {
				t.Errorf("traceparent %v, want [%s]", tp, want)
			}
			if u := seen.Get("x-user"); len(u) != 1 || u[0] != "ada" {
				t.Errorf("the caller's metadata was lost: x-user = %v", u)
			}
		})
	}
}

// TestSampling checks that a ratio keeps about that share of traces, and
// keeps or drops each trace whole (the server follows its caller).
func TestSampling(t *testing.T) {
	const n, ratio = 2000, 0.25
	tr, exp := newTracer(t, ratio)
	c := echo.NewEchoClient(conn(t, inproc.Name, tr, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}))
	for range n {
		if _, err := c.Echo(context.Background(), &echo.EchoRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	kinds := map[trace.TraceID]int{}
	for _, s := range exp.GetSpans() {
		kinds[s.SpanContext.TraceID()]++
	}
	for id, k := range kinds {
		if k != 2 {
			t.Errorf("trace %s has %d spans, want 2", id, k)
		}
	}
	// Binomial(2000, 0.25): mean 500, sd sqrt(2000*0.25*0.75) = 19.4;
	// ±5 sd fails a correct sampler about once in 1.7 million runs.
	if k := len(kinds); k < 403 || k > 597 {
		t.Errorf("%d of %d traces kept at ratio %v, want 500 ± 97", k, n, ratio)
	}
}

func TestBadRatio(t *testing.T) {
	for _, r := range []float64{0, -1, 1.5} {
		if _, err := tracing.New(context.Background(), tracing.Options{Ratio: r, Exporter: tracetest.NewInMemoryExporter()}); err == nil {
			t.Errorf("ratio %v accepted", r)
		}
	}
}

// TestUnbatched: an unbatched tracer hands each span to its exporter as
// the span ends, with no flush; a batched one holds them until its batch
// is due (5 s) or flushed.
func TestUnbatched(t *testing.T) {
	for _, unbatched := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tr, err := tracing.New(context.Background(), tracing.Options{Service: "test", Deployment: "d1", Ratio: 1, Exporter: exp, Unbatched: unbatched})
		if err != nil {
			t.Fatal(err)
		}
		c := echo.NewEchoClient(conn(t, "grpc", tr, passThrough))
		if _, err := c.Echo(context.Background(), &echo.EchoRequest{Payload: []byte("hi")}); err != nil {
			t.Fatal(err)
		}
		want := 0
		if unbatched {
			want = 2
		}
		// The server span ends after the answer is on its way: wait for it
		// a little when it is due at once.
		got := len(exp.GetSpans())
		for i := 0; i < 100 && got < want; i++ {
			time.Sleep(10 * time.Millisecond)
			got = len(exp.GetSpans())
		}
		if got != want {
			t.Errorf("unbatched %v: %d spans exported before any flush, want %d", unbatched, got, want)
		}
		if err := tr.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := len(exp.GetSpans()); got != 2 {
			t.Errorf("unbatched %v: %d spans after a flush, want 2", unbatched, got)
		}
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func passThrough(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	return h(ctx, req)
}

// TestExportFromEnv: the measurement knob's values, and a clear error for
// any other, naming the variable.
func TestExportFromEnv(t *testing.T) {
	for _, tc := range []struct {
		v         string
		replaced  bool
		unbatched bool
		err       string
	}{
		{v: ""},
		{v: tracing.ExportDiscard, replaced: true},
		{v: tracing.ExportDrop, replaced: true, unbatched: true},
		{v: "otlp", err: `SVCLAB_TRACE_EXPORT="otlp": want "discard" or "drop"`},
	} {
		var o tracing.Options
		err := tracing.ExportFromEnv(&o, tc.v)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.v, err, tc.err)
			}
			continue
		}
		if err != nil || (o.Exporter != nil) != tc.replaced || o.Unbatched != tc.unbatched {
			t.Errorf("%q: exporter replaced %v, unbatched %v, err %v", tc.v, o.Exporter != nil, o.Unbatched, err)
		}
	}
}
