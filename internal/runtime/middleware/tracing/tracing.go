// Package tracing is deploy.tracing's middleware: OpenTelemetry spans for
// every call a host serves or makes, as grpc interceptors, so that every
// transport (and inproc) gets them alike.
//
// Each hop makes a client span in the caller and a server span in the
// callee. The trace context crosses as W3C Trace Context (the traceparent
// and tracestate keys) in the call's metadata, which every svclab transport
// carries: gRPC metadata, HTTP headers, the netrpc and protorpc envelopes,
// and inproc's hand-over of outgoing to incoming metadata. Sampling is
// parent-based with the ratio at the root, so a trace is kept or dropped
// whole. Spans are batched off the request path by the SDK's batch span
// processor and exported over OTLP/gRPC. (A batcher of svclab's own that
// woke its exporter once per batch instead of once per span was tried
// and measured no CPU gain, so the library's stays.)
package tracing

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Attribute keys svclab adds to its spans, besides OpenTelemetry's rpc.*
// conventions: which component served a call, and which it was meant for.
const (
	ComponentKey  = attribute.Key("svclab.component")
	PeerKey       = attribute.Key("svclab.peer")
	DeploymentKey = attribute.Key("svclab.deployment")
)

// Options configure a Tracer.
type Options struct {
	// Service is the OpenTelemetry service.name of the spans: the host's
	// group.
	Service string
	// Deployment is the deployment's id, a resource attribute.
	Deployment string
	// Ratio is the share of root calls traced, (0, 1].
	Ratio float64
	// Endpoint is the OTLP/gRPC collector's host:port; plaintext on
	// loopback.
	Endpoint string
	// BatchTimeout is how long spans wait to be exported together;
	// DefaultBatchTimeout when zero.
	BatchTimeout time.Duration
	// Exporter replaces the OTLP exporter (tests, ExportEnv).
	Exporter sdktrace.SpanExporter
	// Unbatched hands each span to the exporter as it ends, on the
	// request path, instead of to the batcher (ExportEnv).
	Unbatched bool
}

// ExportEnv is a measurement knob in a host's environment that replaces
// where its spans go, so that a run can tell which layer of tracing costs
// the hops what (docs/PERFORMANCE.md, "Mesh: what tracing costs a hop"):
// ExportDiscard batches the spans as usual and drops each batch;
// ExportDrop drops each span as it ends, with no batcher at all. Unset, the
// spans go over OTLP to the run's backend; under either value the run's
// trace check finds none there and says so.
const ExportEnv = "SVCLAB_TRACE_EXPORT"

// The values of ExportEnv.
const (
	ExportDiscard = "discard"
	ExportDrop    = "drop"
)

// ExportFromEnv applies ExportEnv's value v to opts; empty leaves them.
func ExportFromEnv(opts *Options, v string) error {
	switch v {
	case "":
	case ExportDiscard:
		opts.Exporter = dropExporter{}
	case ExportDrop:
		opts.Exporter, opts.Unbatched = dropExporter{}, true
	default:
		return fmt.Errorf("tracing: %s=%q: want %q or %q", ExportEnv, v, ExportDiscard, ExportDrop)
	}
	return nil
}

// dropExporter drops every span it is given.
type dropExporter struct{}

func (dropExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropExporter) Shutdown(context.Context) error                             { return nil }

// The batching of spans, as the SDK's BatchSpanProcessor defaults: a
// batch is exported when it holds MaxExportBatch spans or every
// DefaultBatchTimeout.
const (
	DefaultBatchTimeout = 5 * time.Second
	MaxExportBatch      = 512
)

// Tracer makes spans for one host.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// New starts a tracer whose spans go to opts.Endpoint. It does not wait for
// the collector: spans that cannot be sent are counted as dropped by the
// check after the run.
func New(ctx context.Context, opts Options) (*Tracer, error) {
	if opts.Ratio <= 0 || opts.Ratio > 1 {
		return nil, fmt.Errorf("tracing: sampling ratio %v is outside (0, 1]", opts.Ratio)
	}
	exp := opts.Exporter
	if exp == nil {
		var err error
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(opts.Endpoint), otlptracegrpc.WithInsecure())
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter to %s: %w", opts.Endpoint, err)
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", opts.Service),
		DeploymentKey.String(opts.Deployment),
	))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	timeout := opts.BatchTimeout
	if timeout <= 0 {
		timeout = DefaultBatchTimeout
	}
	processor := sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(timeout), sdktrace.WithMaxExportBatchSize(MaxExportBatch))
	if opts.Unbatched {
		processor = sdktrace.WithSyncer(exp)
	}
	tp := sdktrace.NewTracerProvider(
		processor,
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(opts.Ratio))),
	)
	return &Tracer{
		tp:     tp,
		tracer: tp.Tracer("github.com/svclab/svclab/internal/runtime/middleware/tracing"),
		prop:   propagation.TraceContext{},
	}, nil
}

// Flush exports the spans of every call that has ended.
func (t *Tracer) Flush(ctx context.Context) error {
	if err := t.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}

// Shutdown exports the spans still batched and stops the tracer.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}

// untraced is the prefix of the methods left out of traces: health checks
// are the deployer's probes, not requests, as a mesh leaves its probes out.
const untraced = "/grpc.health.v1.Health/"

// Server is the interceptor of component's servers: a server span per
// call, a child of the caller's span when the call carries one.
func (t *Tracer) Server(component string) grpc.UnaryServerInterceptor {
	starts := newStartOptions(trace.SpanKindServer, ComponentKey.String(component))
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, untraced) {
			return handler(ctx, req)
		}
		// Only the trace context's keys are read, not a copy of the
		// whole metadata, which FromIncomingContext would make.
		ctx = t.prop.Extract(ctx, incomingCarrier{ctx})
		ctx, span := t.tracer.Start(ctx, spanName(info.FullMethod), starts.of(info.FullMethod)...)
		defer span.End()
		resp, err := handler(ctx, req)
		end(span, err)
		return resp, err
	}
}

// Client is the interceptor of calls to peer: a client span per call, whose
// context goes out in the call's metadata.
func (t *Tracer) Client(peer string) grpc.UnaryClientInterceptor {
	starts := newStartOptions(trace.SpanKindClient, PeerKey.String(peer))
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasPrefix(method, untraced) {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		ctx, span := t.tracer.Start(ctx, spanName(method), starts.of(method)...)
		defer span.End()
		// Appended to the outgoing metadata rather than set in a copy of
		// it: the caller's metadata is not copied on every call.
		var out outgoingCarrier
		t.prop.Inject(ctx, &out)
		err := invoker(metadata.AppendToOutgoingContext(ctx, out.kv...), method, req, reply, cc, opts...)
		end(span, err)
		return err
	}
}

// startOptions are the options of the spans an interceptor starts, made
// once per method: a span's kind and attributes are the same on every
// call, and building them anew on the request path costs allocations.
type startOptions struct {
	kind  trace.SpanKind
	own   attribute.KeyValue
	byKey sync.Map // full method → []trace.SpanStartOption
}

func newStartOptions(kind trace.SpanKind, own attribute.KeyValue) *startOptions {
	return &startOptions{kind: kind, own: own}
}

func (s *startOptions) of(fullMethod string) []trace.SpanStartOption {
	if v, ok := s.byKey.Load(fullMethod); ok {
		return v.([]trace.SpanStartOption)
	}
	o := []trace.SpanStartOption{
		trace.WithSpanKind(s.kind),
		trace.WithAttributes(append(rpcAttributes(fullMethod), s.own)...),
	}
	v, _ := s.byKey.LoadOrStore(fullMethod, o)
	return v.([]trace.SpanStartOption)
}

func end(span trace.Span, err error) {
	if err == nil {
		return
	}
	s, _ := status.FromError(err)
	span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(s.Code())))
	span.SetStatus(codes.Error, s.Message())
}

// spanName is the method without its leading slash, as OpenTelemetry's
// RPC conventions name spans: "svclab.chain.Hop/Call".
func spanName(fullMethod string) string { return strings.TrimPrefix(fullMethod, "/") }

func rpcAttributes(fullMethod string) []attribute.KeyValue {
	service, method, _ := strings.Cut(spanName(fullMethod), "/")
	return []attribute.KeyValue{
		attribute.String("rpc.system", "svclab"),
		attribute.String("rpc.service", service),
		attribute.String("rpc.method", method),
	}
}

// incomingCarrier lets the W3C propagator read a call's incoming gRPC
// metadata, whose keys are lower case, as HTTP header names are
// case-insensitive.
type incomingCarrier struct{ ctx context.Context }

func (c incomingCarrier) Get(key string) string {
	if v := metadata.ValueFromIncomingContext(c.ctx, strings.ToLower(key)); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c incomingCarrier) Set(string, string) {}

func (c incomingCarrier) Keys() []string {
	md, _ := metadata.FromIncomingContext(c.ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return keys
}

// outgoingCarrier collects what the W3C propagator writes, as key-value
// pairs for metadata.AppendToOutgoingContext.
type outgoingCarrier struct{ kv []string }

func (c *outgoingCarrier) Get(string) string { return "" }

func (c *outgoingCarrier) Set(key, value string) {
	c.kv = append(c.kv, strings.ToLower(key), value)
}

func (c *outgoingCarrier) Keys() []string {
	keys := make([]string, 0, len(c.kv)/2)
	for i := 0; i < len(c.kv); i += 2 {
		keys = append(keys, c.kv[i])
	}
	return keys
}
