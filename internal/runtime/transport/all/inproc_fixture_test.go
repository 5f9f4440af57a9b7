package all_test

import (
	"testing"

	"google.golang.org/grpc"

	"github.com/svclab/svclab/internal/runtime/transport"
)

func inprocFixtures() []fixture { return nil }

func startInproc(t testing.TB, sopts transport.ServerOptions, dopts transport.DialOptions, register func(grpc.ServiceRegistrar)) *running {
	t.Fatal("inproc not built yet")
	return nil
}
