package all_test

import (
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
)

// inprocFixtures has a nil Transport, which start takes to mean inproc.
func inprocFixtures() []fixture { return []fixture{{name: "inproc", network: ""}} }

// inprocServer gives a Channel the Serve/Stop the tests expect of a
// server; a Channel has no listener to serve.
type inprocServer struct {
	*inproc.Channel
	stopped chan struct{}
}

func (s inprocServer) Serve(net.Listener) error { <-s.stopped; return nil }
func (s inprocServer) Stop()                    { close(s.stopped) }

func startInproc(t testing.TB, sopts transport.ServerOptions, dopts transport.DialOptions, register func(grpc.ServiceRegistrar)) *running {
	ch := inproc.New(sopts, dopts)
	register(ch)
	srv := inprocServer{ch, make(chan struct{})}
	r := &running{srv: srv, conn: ch, served: make(chan error, 1)}
	go func() { r.served <- srv.Serve(nil) }()
	t.Cleanup(func() { r.Stop(t) })
	return r
}
