package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is a span processor that batches ended spans for an exporter, as
// the SDK's BatchSpanProcessor does, without its cost on the request path:
// the SDK's hands every span to its export goroutine over a channel, which
// wakes that goroutine (a futex call and a context switch on a busy
// machine) once per span; this one appends to a slice under a mutex and
// wakes the export goroutine once per full batch or timeout. Measured in
// BenchmarkHop (docs/PERFORMANCE.md). It drops no span while fewer than
// maxQueued wait; past that it counts what it drops, and the run's trace
// check reports them.
type batcher struct {
	exp      sdktrace.SpanExporter
	timeout  time.Duration
	maxBatch int

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	dropped atomic.Int64

	exportMu sync.Mutex // one export at a time, in span order
	full     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopped  atomic.Bool
}

// maxQueued bounds the spans that wait for export: some 30 s of a host
// ending 10,000 spans a second, a few hundred MB at worst.
const maxQueued = 1 << 18

func newBatcher(exp sdktrace.SpanExporter, timeout time.Duration, maxBatch int) *batcher {
	b := &batcher{
		exp: exp, timeout: timeout, maxBatch: maxBatch,
		full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go b.run()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if b.stopped.Load() || !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.queue) >= maxQueued {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	b.queue = append(b.queue, s)
	n := len(b.queue)
	b.mu.Unlock()
	if n == b.maxBatch {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

// run exports a batch when one is full or every timeout, until stopped.
func (b *batcher) run() {
	defer close(b.done)
	t := time.NewTicker(b.timeout)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.full:
		}
		// The ticker's deadline matters little: spans are exported in
		// any case by the next tick, a full batch or a flush.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = b.export(ctx) // an export error loses spans; the run's trace check counts them
		cancel()
	}
}

// export sends every queued span, a batch at a time.
func (b *batcher) export(ctx context.Context) error {
	b.exportMu.Lock()
	defer b.exportMu.Unlock()
	var errs []error
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.maxBatch)
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil // release the backing array once drained
		}
		b.mu.Unlock()
		if n == 0 {
			return errors.Join(errs...)
		}
		if err := b.exp.ExportSpans(ctx, batch); err != nil {
			errs = append(errs, fmt.Errorf("export %d spans: %w", n, err))
		}
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
}

func (b *batcher) ForceFlush(ctx context.Context) error { return b.export(ctx) }

func (b *batcher) Shutdown(ctx context.Context) error {
	if b.stopped.Swap(true) {
		return nil
	}
	close(b.stop)
	<-b.done
	err := b.export(ctx)
	if n := b.dropped.Load(); n > 0 {
		err = errors.Join(err, fmt.Errorf("%d spans dropped: more than %d waited for export", n, maxQueued))
	}
	return errors.Join(err, b.exp.Shutdown(ctx))
}
