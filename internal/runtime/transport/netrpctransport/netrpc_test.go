package netrpctransport

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/proto/echo"
)

// TestCancelOvertakesCall covers the race net/rpc allows: the Cancel of a
// call handled before the call itself. The call must still end at once.
func TestCancelOvertakesCall(t *testing.T) {
	s := NewServer(transport.ServerOptions{})
	echo.RegisterEchoServer(s, echo.Service{})
	defer s.Stop()
	r := &receiver{s}
	var found bool
	if err := r.Cancel(42, &found); err != nil || found {
		t.Fatalf("Cancel of a call not yet running: found=%v err=%v", found, err)
	}
	const method = "/svclab.echo.Echo/Echo"
	req := &Request{Method: method, ID: 42, mt: s.resolve(method), msg: &echo.EchoRequest{SleepMicros: 10e6}}
	var resp Response
	start := time.Now()
	if err := r.Call(req, &resp); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("cancelled call ran %v", took)
	}
	var sp spb.Status
	if err := proto.Unmarshal(resp.Status, &sp); err != nil || codes.Code(sp.Code) != codes.Canceled {
		t.Errorf("status %v (%v), want Canceled", status.FromProto(&sp), err)
	}
	if s.early.take(42) {
		t.Error("the early Cancel was not consumed by its call")
	}
}
