// Package protorpctransport is the "protorpc" transport: protobuf messages
// in length-prefixed frames, many calls multiplexed over one TCP or unix
// socket connection, without HTTP/2. It is the lean binary RPC beside
// grpc-go's: a Service Weaver-style protocol of svclab's own.
//
// After a client's preface, every frame is a fixed 13-byte prefix (length,
// call id, kind, header length), a header that is a small protobuf message
// (the method, the caller's remaining time and metadata on a request; the
// status and response metadata on a response), and the message itself. A
// client that gives up on a call sends a Cancel frame, which ends the
// handler's context. docs/TRANSPORTS.md specifies the format for other
// implementations.
//
// One reader goroutine per connection and side parses frames. The server
// runs each call on a worker goroutine, reused from call to call. Callers
// and workers write their own frames: whichever finds no write in
// progress writes, batching the frames others queued meanwhile, so there
// is no writer goroutine. Frame buffers are pooled.
//
// Importing the package registers the transport.
package protorpctransport

import (
	"context"

	"github.com/svclab/svclab/internal/runtime/transport"
)

// Name is the deploy.transport value that selects this transport.
const Name = "protorpc"

func init() { transport.Register(Transport{}) }

// Transport is the protorpc transport.
type Transport struct{}

// Name returns "protorpc".
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
