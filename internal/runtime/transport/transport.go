// Package transport defines how svclab carries a unary RPC between
// components, and keeps the registry of the transports that do it.
//
// Every transport plugs in behind the grpc-go generated stubs: the client side
// is a grpc.ClientConnInterface and the server side a grpc.ServiceRegistrar,
// so application code never knows which transport it runs on. Server-side
// middleware is a grpc.UnaryServerInterceptor handed to the method handler and
// client-side middleware a grpc.UnaryClientInterceptor, on every transport
// alike.
package transport

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/svclab/svclab/internal/registry"
	"google.golang.org/grpc"
)

// Server serves the services registered on it.
type Server interface {
	grpc.ServiceRegistrar
	// Serve accepts connections on lis until Stop is called. It returns nil
	// after Stop.
	Serve(lis net.Listener) error
	// Stop closes the listeners and every open connection.
	Stop()
}

// Conn is a client connection to one server address.
type Conn interface {
	grpc.ClientConnInterface
	Close() error
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// Interceptors run around every handler, outermost first.
	Interceptors []grpc.UnaryServerInterceptor
	// TLS, when set, makes the server speak TLS (mTLS when it asks for
	// client certificates).
	TLS *tls.Config
	// Codec names the message encoding of a transport that offers a
	// choice (deploy.http_codec for http); empty means its default.
	// Transports without a choice ignore it.
	Codec string
	// HTTPLimits bound what one client can make an HTTP server hold; only
	// the http transport reads them.
	HTTPLimits HTTPLimits
	// Web, when set, answers the HTTP requests whose path is no method's
	// route (an entry component's own pages, runtime.WebHandler); only
	// the http transport reads it.
	Web http.Handler
}

// HTTPLimits are the limits of a production net/http server. A zero field
// sets no limit (beyond net/http's own default header limit), so a bare
// server measures the transport alone; a deployment gets the spec's
// [deploy.http_limits].
type HTTPLimits struct {
	// MaxBodyBytes is the largest request body; a larger one is answered
	// 413 before it is read.
	MaxBodyBytes int64
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout are net/http's.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
}

// DialOptions configure a Conn.
type DialOptions struct {
	// Interceptors run around every call, outermost first.
	Interceptors []grpc.UnaryClientInterceptor
	// TLS, when set, makes the client speak TLS.
	TLS *tls.Config
	// Codec is ServerOptions.Codec for the client side.
	Codec string
	// Dialer, when set, opens the client's connections instead of a
	// net.Dialer (the netns deployer's client opens them in its own
	// network namespace).
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// IdleTimeout, when set, closes the client's idle connections after
	// it. Callers set it below their peers' server idle timeout
	// (deploy.http_limits.idle_timeout): a call that reuses a connection
	// the server is closing that instant fails, and a POST is not retried.
	IdleTimeout time.Duration
}

// DialContext opens a connection with o.Dialer, or a net.Dialer when it is
// nil.
func (o DialOptions) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if o.Dialer != nil {
		return o.Dialer(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Transport carries calls across process boundaries.
type Transport interface {
	// Name is the value of deploy.transport that selects this transport.
	Name() string
	// Networks lists the listener networks the transport can serve on,
	// preferred first ("tcp", "unix").
	Networks() []string
	NewServer(opts ServerOptions) Server
	Dial(ctx context.Context, network, addr string, opts DialOptions) (Conn, error)
}

var transports = registry.New[Transport]("transport")

// Register makes a transport available by name. It panics on a duplicate
// name, as that is a programming error.
func Register(t Transport) { transports.Register(t.Name(), t) }

// Lookup returns the transport registered under name.
func Lookup(name string) (Transport, error) { return transports.Lookup(name) }

// Names lists the registered transports, sorted.
func Names() []string { return transports.Names() }
