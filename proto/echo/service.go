package echo

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// Service is the reference implementation of EchoServer. It honours
// sleep_micros (returning early, with the context's error, when the
// context ends first) and fail_code.
type Service struct {
	UnimplementedEchoServer
}

// Echo returns the payload, after sleeping or failing as the request asks.
func (Service) Echo(ctx context.Context, in *EchoRequest) (*EchoResponse, error) {
	if in.SleepMicros > 0 {
		t := time.NewTimer(time.Duration(in.SleepMicros) * time.Microsecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if in.FailCode != 0 {
		return nil, status.Errorf(codes.Code(in.FailCode), "echo: failing with %s as asked", codes.Code(in.FailCode))
	}
	return &EchoResponse{Payload: in.Payload}, nil
}

// Ping answers with nothing.
func (Service) Ping(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// Reflect returns its argument.
func (Service) Reflect(_ context.Context, v *structpb.Value) (*structpb.Value, error) {
	return v, nil
}

// Mirror returns a deep copy of its argument, so the caller's message and
// the answer share nothing.
func (Service) Mirror(_ context.Context, s *Shape) (*Shape, error) {
	return proto.CloneOf(s), nil
}
