package runtime

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// WebHandler is an entry component that also serves pages of its own over
// HTTP, as Online Boutique's frontend does: the host mounts it on the
// HTTP/JSON gateway, where it answers every path that is not a method's
// route (POST /<package.Service>/<Method>).
type WebHandler interface {
	http.Handler
}

// WebRouter is a WebHandler that names the route a request is for (a
// net/http pattern such as "GET /product/{id}"), so that its pages are
// counted and traced per route, not per URL; one that does not is counted
// per HTTP method.
type WebRouter interface {
	Route(r *http.Request) string
}

// web returns impl's pages as calls of component through the server
// interceptors ints (the host's drain gate and served count, then
// deploy.metrics and deploy.tracing), as its RPCs are: each page is a
// call of the method "<component>/<route>", and the trace context of the
// request's W3C headers parents its span, whose context the page's own
// calls carry on. Nil when impl serves no pages.
func (h *host) web(impl any, ints []grpc.UnaryServerInterceptor, component string) http.Handler {
	wh, ok := impl.(WebHandler)
	if !ok {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Method
		if rt, ok := wh.(WebRouter); ok {
			if p := rt.Route(r); p != "" {
				route = p
			}
		}
		info := &grpc.UnaryServerInfo{Server: impl, FullMethod: "/" + component + "/" + route}
		ctx := r.Context()
		if md := traceMetadata(r.Header); md != nil {
			ctx = metadata.NewIncomingContext(ctx, md)
		}
		rec := &statusRecorder{ResponseWriter: w}
		_, err := chainServer(ints, ctx, r, info, func(ctx context.Context, _ any) (any, error) {
			wh.ServeHTTP(rec, r.WithContext(ctx))
			return nil, pageError(rec.code)
		})
		if rec.code == 0 && err != nil { // refused before the page ran: draining
			http.Error(w, status.Convert(err).Message(), http.StatusServiceUnavailable)
		}
	})
}

// chainServer runs handler through ints, the first outermost, as grpc-go
// chains a server's interceptors.
func chainServer(ints []grpc.UnaryServerInterceptor, ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if len(ints) == 0 {
		return handler(ctx, req)
	}
	return ints[0](ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return chainServer(ints[1:], ctx, req, info, handler)
	})
}

// traceHeaders are the W3C trace context's headers, which the tracing
// middleware reads from a call's metadata.
var traceHeaders = []string{"traceparent", "tracestate", "baggage"}

func traceMetadata(h http.Header) metadata.MD {
	var md metadata.MD
	for _, k := range traceHeaders {
		if vs := h.Values(k); len(vs) > 0 {
			if md == nil {
				md = metadata.MD{}
			}
			md[k] = vs
		}
	}
	return md
}

// pageError is the outcome of a page with HTTP status code as the
// metrics and spans of calls count it: success below 400, else the gRPC
// code that status stands for (the inverse of the http transport's and of
// the grpc-gateway's mapping).
func pageError(code int) error {
	if code < 400 {
		return nil
	}
	c := codes.Internal
	switch code {
	case http.StatusBadRequest:
		c = codes.InvalidArgument
	case http.StatusNotFound:
		c = codes.NotFound
	case http.StatusMethodNotAllowed:
		c = codes.Unimplemented
	case http.StatusTooManyRequests:
		c = codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		c = codes.Unavailable
	case http.StatusGatewayTimeout:
		c = codes.DeadlineExceeded
	default:
		if code < 500 {
			c = codes.FailedPrecondition
		}
	}
	return status.Error(c, strings.ToLower(http.StatusText(code)))
}

// statusRecorder remembers the status a page answered with.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
