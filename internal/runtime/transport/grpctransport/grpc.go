// Package grpctransport is the "grpc" transport: grpc-go over HTTP/2, on a
// TCP or unix socket. It adds nothing to the wire grpc-go speaks, so any
// gRPC client or server interoperates with it.
//
// Importing the package registers the transport.
package grpctransport

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/svclab/svclab/internal/runtime/transport"
)

// Name is the deploy.transport value that selects this transport.
const Name = "grpc"

func init() { transport.Register(Transport{}) }

// Transport is the grpc transport.
type Transport struct{}

// Name returns "grpc".
func (Transport) Name() string { return Name }

// Networks returns tcp and unix: loopback TCP is what a split deployment
// pays between machines, so it comes first; unix sockets are opt-in. unix first, as it skips the TCP stack.
func (Transport) Networks() []string { return []string{"tcp", "unix"} }

// NewServer returns a *grpc.Server, which satisfies transport.Server as is.
func (Transport) NewServer(opts transport.ServerOptions) transport.Server {
	return NewServer(opts)
}

// NewServer is Transport.NewServer with the concrete type, for callers that
// want grpc.Server's own methods (GracefulStop, GetServiceInfo).
func NewServer(opts transport.ServerOptions) *grpc.Server {
	sopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(opts.Interceptors...)}
	if opts.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	return grpc.NewServer(sopts...)
}

// Dial returns a client connection to addr. Like grpc.NewClient it connects
// in the background and reconnects after failures; ctx bounds only the
// set-up, not the connection's life.
func (Transport) Dial(ctx context.Context, network, addr string, opts transport.DialOptions) (transport.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("grpc dial %s %s: %w", network, addr, err)
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// The dialer ignores grpc's notion of the address family, so one
		// target form serves tcp and unix alike.
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return opts.DialContext(ctx, network, a)
		}),
		grpc.WithChainUnaryInterceptor(opts.Interceptors...),
	}
	if network == "unix" || network == "unixpacket" {
		// A socket path is no valid :authority, nor a TLS server name.
		dopts = append(dopts, grpc.WithAuthority("localhost"))
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("grpc dial %s %s: %w", network, addr, err)
	}
	cc.Connect()
	return cc, nil
}
