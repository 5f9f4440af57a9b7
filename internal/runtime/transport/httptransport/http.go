// Package httptransport is the "http" transport: REST-style JSON over
// HTTP/1.1. Every unary method is one route,
//
//	POST /<package.Service>/<Method>
//
// whose request and response bodies are the messages in protojson form, so
// any HTTP client can call a service:
//
//	curl -d '{"payload":"aGVsbG8="}' http://127.0.0.1:8080/svclab.echo.Echo/Echo
//
// A failed call answers with the HTTP status of grpc-gateway's mapping
// (HTTPStatus), a Grpc-Status header with the numeric gRPC code, and a body
// that is the google.rpc.Status in JSON, {"code":5,"message":"..."}; the
// client turns it back into the same gRPC status. A deadline travels as a
// Grpc-Timeout header, in gRPC's format, from which the server derives its
// context's deadline; cancelling a call closes its connection, which ends
// the server's context. Outgoing metadata travels as request headers and
// arrives as incoming metadata, binary ("-bin") values base64-encoded as
// gRPC does; headers that describe the HTTP exchange rather than the call
// (Content-Type, User-Agent, Accept and the like) do not.
//
// Bodies are read and written by the codec that ServerOptions.Codec and
// DialOptions.Codec name (deploy.http_codec): "fast", the code
// protoc-gen-go-svclab generates for each message (package pbjson), or
// "protojson". Both write and read the same JSON, protojson's mapping.
//
// Importing the package registers the transport.
package httptransport

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/internal/dispatch"
)

// Name is the deploy.transport value that selects this transport.
const Name = "http"

// Header names the transport adds to plain REST.
const (
	// TimeoutHeader carries the caller's remaining time, as grpc-timeout
	// does: digits and a unit (n, u, m, S, M, H), e.g. "250m".
	TimeoutHeader = "Grpc-Timeout"
	// StatusHeader carries the numeric gRPC code of an answer that failed.
	StatusHeader = "Grpc-Status"
	// MessageHeader carries its message, URL-query-escaped.
	MessageHeader = "Grpc-Message"
)

// MaxMessageSize bounds a request or response body. JSON's base64 makes a
// bytes field a third larger than in protobuf, so this is well above
// grpc-go's 4 MiB default for the same messages.
const MaxMessageSize = 64 << 20

func init() { transport.Register(Transport{}) }

// Transport is the http transport.
type Transport struct{}

// Name returns "http".
func (Transport) Name() string { return Name }

// Networks returns tcp and unix: loopback TCP is what a split deployment
// pays between machines, so it comes first; unix sockets are opt-in.
func (Transport) Networks() []string { return []string{"tcp", "unix"} }

// NewServer returns a *Server.
func (Transport) NewServer(opts transport.ServerOptions) transport.Server { return NewServer(opts) }

// Dial returns a *Conn.
func (Transport) Dial(ctx context.Context, network, addr string, opts transport.DialOptions) (transport.Conn, error) {
	return Dial(ctx, network, addr, opts)
}

// Server serves registered services over HTTP/1.1. It is an http.Handler
// too, so its routes can be mounted in another server's mux.
type Server struct {
	table     dispatch.Table
	intercept grpc.UnaryServerInterceptor
	tls       *tls.Config
	codec     codec
	codecErr  error        // an unknown ServerOptions.Codec, which Serve reports
	maxBody   int64        // 0: MaxMessageSize alone
	web       http.Handler // transport.ServerOptions.Web
	hs        *http.Server
	// stop ends every handler's context at Stop, even one whose connection
	// the close has not yet been noticed on.
	base context.Context
	stop context.CancelFunc
}

// NewServer returns a Server with no services.
func NewServer(opts transport.ServerOptions) *Server {
	s := &Server{intercept: dispatch.ChainServer(opts.Interceptors), web: opts.Web}
	s.codec, s.codecErr = codecNamed(opts.Codec)
	s.base, s.stop = context.WithCancel(context.Background())
	if opts.TLS != nil {
		s.tls = opts.TLS.Clone()
		// HTTP/1.1 only: this transport is the JSON-over-HTTP/1.1 point of
		// comparison, and h2 is what the grpc transport measures.
		s.tls.NextProtos = []string{"http/1.1"}
	}
	l := opts.HTTPLimits
	s.maxBody = l.MaxBodyBytes
	s.hs = &http.Server{
		Handler: s,
		// Timeouts only as the options ask: each makes net/http reset a
		// socket deadline on every request, which wakes the runtime's
		// poller with two extra system calls, some 5% of a small call's
		// latency (docs/PERFORMANCE.md). A deployment sets the spec's
		// [deploy.http_limits]; a bare server measures the transport.
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return s.base },
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	return s
}

// RegisterService implements grpc.ServiceRegistrar. Only unary methods get
// routes.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.table.RegisterService(desc, impl)
}

// GetServiceInfo reports the registered services, as grpc.Server does.
func (s *Server) GetServiceInfo() map[string]grpc.ServiceInfo { return s.table.GetServiceInfo() }

// Serve accepts connections on lis until Stop. It returns nil after Stop.
func (s *Server) Serve(lis net.Listener) error {
	if s.codecErr != nil {
		return fmt.Errorf("http serve %s: %w", lis.Addr(), s.codecErr)
	}
	if s.tls != nil {
		lis = tls.NewListener(lis, s.tls)
	}
	err := s.hs.Serve(lis)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("http serve %s: %w", lis.Addr(), err)
}

// Stop closes the listeners and connections and ends the context of every
// call in progress.
func (s *Server) Stop() {
	s.stop()
	s.hs.Close()
}

// ServeHTTP answers one call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := s.table.Lookup(r.URL.Path)
	if m == nil && s.web != nil {
		s.web.ServeHTTP(w, r)
		return
	}
	if m == nil {
		writeStatus(w, http.StatusNotFound, status.New(codes.Unimplemented, "http: unknown method "+r.URL.Path))
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == HealthPath {
		s.serveProbe(w, r, m) // probe.go
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, http.StatusMethodNotAllowed, status.New(codes.Unimplemented, "http: "+r.URL.Path+" takes POST, not "+r.Method))
		return
	}
	ctx := r.Context()
	if v := r.Header.Get(TimeoutHeader); v != "" {
		d, err := dispatch.DecodeTimeout(v)
		if err != nil {
			writeStatus(w, 0, status.New(codes.InvalidArgument, "http: "+TimeoutHeader+" header: "+err.Error()))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if md := headerMetadata(r.Header); md != nil {
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	if !jsonBody(r) {
		writeStatus(w, http.StatusUnsupportedMediaType, status.New(codes.InvalidArgument,
			"http: "+r.URL.Path+" takes a JSON body; send Content-Type: application/json, not "+r.Header.Get("Content-Type")))
		return
	}
	if s.maxBody > 0 {
		if r.ContentLength > s.maxBody {
			// Refused before a byte of the body is read; net/http then
			// closes the connection rather than drain a body that large.
			writeStatus(w, http.StatusRequestEntityTooLarge, status.Newf(codes.ResourceExhausted,
				"http: body of %d bytes exceeds deploy.http_limits.max_body (%d bytes)", r.ContentLength, s.maxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
	}
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			writeStatus(w, http.StatusRequestEntityTooLarge, status.Newf(codes.ResourceExhausted,
				"http: chunked body exceeds deploy.http_limits.max_body (%d bytes)", mbe.Limit))
			return
		}
		writeStatus(w, 0, status.Convert(err))
		return
	}
	dec := func(in any) error {
		if len(body) == 0 {
			return nil // curl -X POST with no body means the empty message
		}
		if err := s.codec.unmarshal(body, in.(proto.Message)); err != nil {
			return status.Errorf(codes.InvalidArgument, "http: decoding %s request: %v", m.FullMethod, err)
		}
		return nil
	}
	resp, err := m.Handler(m.Impl, ctx, dec, s.intercept)
	if err != nil {
		writeStatus(w, 0, status.Convert(dispatch.StatusError(err)))
		return
	}
	out, err := s.codec.marshal(resp.(proto.Message))
	if err != nil {
		writeStatus(w, 0, status.Newf(codes.Internal, "http: encoding %s response: %v", m.FullMethod, err))
		return
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if len(out) > smallBody {
		// net/http counts a small body itself; a large one it would
		// otherwise send chunked.
		h["Content-Length"] = []string{strconv.Itoa(len(out))}
	}
	w.Write(out)
}

// smallBody is the size up to which net/http buffers a handler's output
// and sets Content-Length on its own.
const smallBody = 2048

var jsonContentType = []string{"application/json"}

// writeStatus answers with st; httpStatus 0 means the one HTTPStatus maps
// st's code to.
func writeStatus(w http.ResponseWriter, httpStatus int, st *status.Status) {
	if httpStatus == 0 {
		httpStatus = HTTPStatus(st.Code())
	}
	body, err := marshalOpts.Marshal(st.Proto())
	if err != nil {
		// Details of a type this binary does not know cannot be written as
		// JSON; the code and message still can.
		body, _ = marshalOpts.Marshal(&spb.Status{Code: int32(st.Code()), Message: st.Message()})
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h.Set(StatusHeader, strconv.Itoa(int(st.Code())))
	h.Set(MessageHeader, url.QueryEscape(st.Message()))
	w.WriteHeader(httpStatus)
	w.Write(body)
}

// readBody reads a whole body, in one allocation when its length is known.
// jsonBody reports whether r's body may be read as JSON: its Content-Type
// is application/json or a +json type, or it has none (svclab's own
// clients always send one; curl --data without -H sends a form type, and
// is told what to send instead).
func jsonBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func readBody(r io.Reader, n int64) ([]byte, error) {
	if n > MaxMessageSize {
		return nil, status.Errorf(codes.ResourceExhausted, "http: message of %d bytes exceeds the limit of %d", n, MaxMessageSize)
	}
	if n >= 0 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, bodyError(err)
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxMessageSize+1))
	if err != nil {
		return nil, bodyError(err)
	}
	if len(b) > MaxMessageSize {
		return nil, status.Errorf(codes.ResourceExhausted, "http: message exceeds the limit of %d bytes", MaxMessageSize)
	}
	return b, nil
}

// headerMetadata makes the request headers incoming metadata, as grpc-go
// does with HTTP/2 headers, less those that describe the HTTP exchange
// itself rather than the call. It returns nil when none is left, which
// is the common case and costs nothing.
func headerMetadata(h http.Header) metadata.MD {
	var md metadata.MD
	for k, vs := range h {
		switch k {
		case "Accept", "Accept-Encoding", "Connection", "Content-Length", "Content-Type", "Keep-Alive",
			"Te", "Transfer-Encoding", "Upgrade", "User-Agent", TimeoutHeader:
			continue
		}
		if md == nil {
			md = make(metadata.MD, len(h))
		}
		k = strings.ToLower(k)
		if strings.HasSuffix(k, "-bin") {
			dec := make([]string, 0, len(vs))
			for _, v := range vs {
				b, err := decodeBinHeader(v)
				if err != nil {
					continue // as grpc-go does: drop what does not decode
				}
				dec = append(dec, string(b))
			}
			vs = dec
		}
		md[k] = vs
	}
	return md
}

func decodeBinHeader(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// Conn calls a Server. It keeps idle connections for reuse, as many per
// host as there have been concurrent calls, so a steady load reuses them
// rather than dialling.
type Conn struct {
	base      string // scheme://host, the method's path follows
	codec     codec
	client    *http.Client
	transport *http.Transport
	intercept grpc.UnaryClientInterceptor
	invoker   grpc.UnaryInvoker
}

// Dial returns a Conn to the Server at addr. Connections are made on
// demand; ctx bounds only Dial itself.
func Dial(ctx context.Context, network, addr string, opts transport.DialOptions) (*Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("http dial %s %s: %w", network, addr, err)
	}
	cd, err := codecNamed(opts.Codec)
	if err != nil {
		return nil, fmt.Errorf("http dial %s %s: %w", network, addr, err)
	}
	host := addr
	if network == "unix" {
		host = "localhost" // the Host header and default TLS server name
	}
	scheme := "http"
	if opts.TLS != nil {
		scheme = "https"
	}
	t := &http.Transport{
		// Every connection goes to the one server, whatever the URL says.
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return opts.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     opts.TLS,
		MaxIdleConns:        0, // no limit across hosts: there is one host
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     cmp.Or(opts.IdleTimeout, 90*time.Second),
		// Compressing JSON costs CPU and distorts what the transport is
		// being compared on.
		DisableCompression: true,
		ForceAttemptHTTP2:  false,
	}
	c := &Conn{
		base:      scheme + "://" + host,
		codec:     cd,
		client:    &http.Client{Transport: t},
		transport: t,
		intercept: dispatch.ChainClient(opts.Interceptors),
	}
	c.invoker = c.invoke
	return c, nil
}

// Invoke implements grpc.ClientConnInterface. Client interceptors receive a
// nil *grpc.ClientConn.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if c.intercept != nil {
		return c.intercept(ctx, method, args, reply, nil, c.invoker, opts...)
	}
	return c.invoke(ctx, method, args, reply, nil)
}

func (c *Conn) invoke(ctx context.Context, method string, args, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	body, err := c.codec.marshal(args.(proto.Message))
	if err != nil {
		return status.Errorf(codes.Internal, "http: encoding %s request: %v", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader(body))
	if err != nil {
		return status.Errorf(codes.Internal, "http: request for %s: %v", method, err)
	}
	h := req.Header
	h["Content-Type"] = jsonContentType
	if dl, ok := ctx.Deadline(); ok {
		h[TimeoutHeader] = []string{dispatch.EncodeTimeout(time.Until(dl))}
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		for k, vs := range md {
			if strings.HasSuffix(k, "-bin") {
				enc := make([]string, len(vs))
				for i, v := range vs {
					enc[i] = base64.RawStdEncoding.EncodeToString([]byte(v))
				}
				vs = enc
			}
			h[k] = vs
		}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return status.FromContextError(ctxErr).Err()
		}
		return status.Errorf(codes.Unavailable, "http: %s: %v", method, err)
	}
	defer resp.Body.Close()
	out, err := readBody(resp.Body, resp.ContentLength)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return status.FromContextError(ctxErr).Err()
		}
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return responseStatus(resp, out).Err()
	}
	if err := c.codec.unmarshal(out, reply.(proto.Message)); err != nil {
		return status.Errorf(codes.Internal, "http: decoding %s response: %v", method, err)
	}
	return nil
}

// responseStatus recovers the gRPC status of a failed answer: from the
// body if it is a google.rpc.Status, else from the headers, else from the
// HTTP status alone.
func responseStatus(resp *http.Response, body []byte) *status.Status {
	var sp spb.Status
	if err := unmarshalOpts.Unmarshal(body, &sp); err == nil && sp.Code != 0 {
		return status.FromProto(&sp)
	}
	if v := resp.Header.Get(StatusHeader); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n != 0 {
			msg, _ := url.QueryUnescape(resp.Header.Get(MessageHeader))
			return status.New(codes.Code(n), msg)
		}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return status.Newf(Code(resp.StatusCode), "http: %s: %s", resp.Status, msg)
}

// NewStream implements grpc.ClientConnInterface; the http transport
// carries unary calls only.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.Unimplemented, "http: streaming method %s is not supported", method)
}

// Close closes the idle connections. Calls still in flight finish.
func (c *Conn) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

// bodyError keeps a *http.MaxBytesError for the caller to answer 413;
// anything else is the connection failing mid-body.
func bodyError(err error) error {
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return err
	}
	return status.Errorf(codes.Unavailable, "http: reading body: %v", err)
}
