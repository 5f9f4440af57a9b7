package balancer

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Health checking, as grpc-go's client-side health checking does it for its
// own balancers: an endpoint whose call fails with UNAVAILABLE (it cannot be
// dialled, its connection broke, or it is draining) is taken out of the
// pickers' choice, and the standard gRPC health service is asked, over the
// endpoint's own transport, until it answers SERVING again. Every svclab
// host serves that service beside each component. So an endpoint that is
// gone costs the calls that were in flight to it and the one call that
// found it gone, not its share of every later call.

// Defaults of the health probe's backoff.
const (
	DefaultProbeMin = 20 * time.Millisecond
	DefaultProbeMax = time.Second
	probeTimeout    = time.Second
)

// Healthy reports whether the endpoint takes calls: it has not failed with
// UNAVAILABLE since its last SERVING answer. Pickers skip endpoints that
// are not healthy while any other is.
func (s *SubConn) Healthy() bool { return !s.sick.Load() }

// observe marks the endpoint sick after an UNAVAILABLE call and starts its
// probe, once.
func (s *SubConn) observe(err error) {
	if err == nil || status.Code(err) != codes.Unavailable {
		return
	}
	if s.sick.CompareAndSwap(false, true) {
		go s.probe()
	}
}

// probe asks the health service until it answers SERVING or the endpoint
// is retired, backing off between tries. A probe holds a call on the
// endpoint, so that a retire waits for it before closing the connection.
func (s *SubConn) probe() {
	wait := s.probeMin
	for {
		time.Sleep(wait)
		wait = min(2*wait, s.probeMax)
		if !s.calls.Enter() {
			return // retired
		}
		ok := s.check()
		s.calls.Leave()
		if ok {
			s.sick.Store(false)
			return
		}
	}
}

func (s *SubConn) check() bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	c, err := s.connect(ctx)
	if err != nil {
		return false
	}
	resp, err := healthpb.NewHealthClient(c).Check(ctx, &healthpb.HealthCheckRequest{})
	return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
}
