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
// whole. Spans are batched and exported over OTLP/gRPC.
package tracing

import (
	"context"
	"fmt"
	"strings"
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
	// BatchTimeout is how long spans wait to be exported together; the
	// SDK's default (5 s) when zero.
	BatchTimeout time.Duration
	// Exporter replaces the OTLP exporter (tests).
	Exporter sdktrace.SpanExporter
}

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
	var bopts []sdktrace.BatchSpanProcessorOption
	if opts.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(opts.BatchTimeout))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, bopts...),
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
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, untraced) {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		ctx = t.prop.Extract(ctx, mdCarrier(md))
		ctx, span := t.tracer.Start(ctx, spanName(info.FullMethod),
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(append(rpcAttributes(info.FullMethod), ComponentKey.String(component))...))
		defer span.End()
		resp, err := handler(ctx, req)
		end(span, err)
		return resp, err
	}
}

// Client is the interceptor of calls to peer: a client span per call, whose
// context goes out in the call's metadata.
func (t *Tracer) Client(peer string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasPrefix(method, untraced) {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		ctx, span := t.tracer.Start(ctx, spanName(method),
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(append(rpcAttributes(method), PeerKey.String(peer))...))
		defer span.End()
		md, _ := metadata.FromOutgoingContext(ctx)
		md = md.Copy()
		t.prop.Inject(ctx, mdCarrier(md))
		err := invoker(metadata.NewOutgoingContext(ctx, md), method, req, reply, cc, opts...)
		end(span, err)
		return err
	}
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

// mdCarrier lets the W3C propagator read and write gRPC metadata, whose
// keys are lower case, as HTTP header names are case-insensitive.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
