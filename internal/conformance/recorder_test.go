package conformance

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	opspb "github.com/svclab/svclab/proto/rpcops"
	selectorpb "github.com/svclab/svclab/proto/selector"
)

// recorder is the peer a frontend under test calls: a Go Selector and Ops
// server on svclab's own transport, which records what each call arrived
// with (metadata, deadline) and fails on request with any code, so that
// what an implementation sends and how it relays an answer can be seen.
type recorder struct {
	selectorpb.UnimplementedSelectorServer
	opspb.UnimplementedOpsServer

	mu   sync.Mutex
	last arrival
	addr string
}

// arrival is what the recorder saw of one call.
type arrival struct {
	method      string
	md          metadata.MD
	hasDeadline bool
	remaining   time.Duration
}

// failMessage is the message of a failure the recorder was asked for: it
// has characters the http transport must escape in Grpc-Message.
func failMessage(c codes.Code) string {
	return fmt.Sprintf("recorder: failing with %d as asked — ünïcödé, spaces/slashes?&=%%+ and 'quotes'", int(c))
}

// startRecorder serves a recorder over the named transport on loopback TCP.
func startRecorder(t *testing.T, transportName string) *recorder {
	t.Helper()
	tr, err := transport.Lookup(transportName)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{addr: lis.Addr().String()}
	srv := tr.NewServer(transport.ServerOptions{})
	selectorpb.RegisterSelectorServer(srv, r)
	opspb.RegisterOpsServer(srv, r)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return r
}

func (r *recorder) record(ctx context.Context, method string) {
	a := arrival{method: method}
	a.md, _ = metadata.FromIncomingContext(ctx)
	if dl, ok := ctx.Deadline(); ok {
		a.hasDeadline, a.remaining = true, time.Until(dl)
	}
	r.mu.Lock()
	r.last = a
	r.mu.Unlock()
}

// take returns the last call's arrival and forgets it.
func (r *recorder) take() arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.last
	r.last = arrival{}
	return a
}

// Select fails with code -values[0] when that is negative, and otherwise
// answers the first three positions (or the first, thrice).
func (r *recorder) Select(ctx context.Context, in *selectorpb.SelectRequest) (*selectorpb.SelectResponse, error) {
	r.record(ctx, selectorpb.Selector_Select_FullMethodName)
	v := in.GetValues()
	if len(v) > 0 && v[0] < 0 {
		return nil, status.Error(codes.Code(-v[0]), failMessage(codes.Code(-v[0])))
	}
	if len(v) == 0 {
		return nil, status.Error(codes.InvalidArgument, "recorder: values is empty")
	}
	resp := &selectorpb.SelectResponse{}
	for i := range 3 {
		p := min(i, len(v)-1)
		resp.Positions = append(resp.Positions, int32(p))
		resp.Values = append(resp.Values, v[p])
	}
	return resp, nil
}

func (r *recorder) Void(ctx context.Context, _ *opspb.VoidRequest) (*opspb.VoidResponse, error) {
	r.record(ctx, opspb.Ops_Void_FullMethodName)
	return &opspb.VoidResponse{}, nil
}

// Long fails with code -value when value is negative.
func (r *recorder) Long(ctx context.Context, in *opspb.LongRequest) (*opspb.LongResponse, error) {
	r.record(ctx, opspb.Ops_Long_FullMethodName)
	if in.GetValue() < 0 {
		return nil, status.Error(codes.Code(-in.GetValue()), failMessage(codes.Code(-in.GetValue())))
	}
	return &opspb.LongResponse{Value: in.GetValue() + 1}, nil
}
