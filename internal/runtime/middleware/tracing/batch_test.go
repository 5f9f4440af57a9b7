package tracing_test

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/svclab/svclab/internal/runtime/middleware/tracing"
)

// TestBatching ends spans from many goroutines at once: a full batch is
// exported without waiting for the timeout or a flush, and after Shutdown
// every span has been exported exactly once.
func TestBatching(t *testing.T) {
	exp := &recorder{}
	tr, err := tracing.New(context.Background(), tracing.Options{Service: "test", Ratio: 1, Exporter: exp, BatchTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := tr.Server("c")
	info := &grpc.UnaryServerInfo{FullMethod: "/svclab.echo.Echo/Echo"}
	ok := func(context.Context, any) (any, error) { return nil, nil }
	const workers, each = 8, 500 // 4,000 spans: 7 full batches and a rest
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, _ = srv(context.Background(), nil, info, ok)
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for exp.count() < tracing.MaxExportBatch && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := exp.count(); n < tracing.MaxExportBatch {
		t.Fatalf("%d spans exported without a flush; want the full batches (%d each) sent at once", n, tracing.MaxExportBatch)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	exp.mu.Lock()
	defer exp.mu.Unlock()
	if len(exp.ids) != workers*each || exp.spans != workers*each {
		t.Errorf("%d distinct spans exported in %d exports of %d, want each of %d once", len(exp.ids), len(exp.batches), exp.spans, workers*each)
	}
	for _, n := range exp.batches {
		if n > tracing.MaxExportBatch {
			t.Errorf("a batch of %d spans, above %d", n, tracing.MaxExportBatch)
		}
	}
}

// recorder is an exporter that keeps the id of every span it is given and
// the size of every batch, and forgets nothing at Shutdown.
type recorder struct {
	mu      sync.Mutex
	ids     map[trace.SpanID]bool
	spans   int
	batches []int
}

func (r *recorder) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[trace.SpanID]bool{}
	}
	for _, s := range spans {
		r.ids[s.SpanContext().SpanID()] = true
	}
	r.spans += len(spans)
	r.batches = append(r.batches, len(spans))
	return nil
}

func (r *recorder) Shutdown(context.Context) error { return nil }

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans
}
