package runtime

import (
	"context"
	"fmt"
	"log"
	"maps"
	"net"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/balancer"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// control serves the host protocol's Control service, over grpc-go itself:
// it is the deployer's channel, not a transport under test, and a host in
// any language can serve it with its own gRPC library.
type control struct {
	hostv1.UnimplementedControlServer
	h    *host
	what string
	srv  *grpc.Server
	lis  net.Listener
}

func newControl(h *host, l *hostv1.Listener) (*control, error) {
	lis, err := listen(l)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	c := &control{h: h, what: "control on " + servedAt(l, lis).String(), srv: grpc.NewServer(), lis: lis}
	hostv1.RegisterControlServer(c.srv, c)
	return c, nil
}

func (c *control) serve() error { return c.srv.Serve(c.lis) }

// stop lets calls in progress (a Stop's answer) finish for up to grace.
func (c *control) stop(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		c.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		c.srv.Stop()
	}
	// GracefulStop closes the listener it served; this covers one that
	// never got to Serve.
	_ = c.lis.Close()
}

// UpdatePeers checks the whole request before it changes any set, so that
// a bad endpoint leaves every peer as it was.
func (c *control) UpdatePeers(_ context.Context, req *hostv1.UpdatePeersRequest) (*hostv1.UpdatePeersResponse, error) {
	h := c.h
	next := map[string][]balancer.Address{}
	for _, name := range slices.Sorted(maps.Keys(req.GetPeers())) {
		if _, ok := h.peers[name]; !ok {
			return nil, status.Errorf(codes.InvalidArgument, "group %s does not call component %s (it calls %v)", h.cfg.GetGroup(), name, slices.Sorted(maps.Keys(h.peers)))
		}
		addrs, err := h.addresses(name, req.GetPeers()[name])
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "peer %s: %v", name, err)
		}
		next[name] = addrs
	}
	for _, name := range slices.Sorted(maps.Keys(next)) {
		if err := h.peers[name].Update(next[name]); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
		}
		var eps []string
		for _, a := range next[name] {
			eps = append(eps, a.Addr)
		}
		log.Printf("group %s: peer %s now at %s", h.cfg.GetGroup(), name, orNone(eps))
	}
	return &hostv1.UpdatePeersResponse{}, nil
}

// Drain answers once the host is idle.
func (c *control) Drain(ctx context.Context, _ *hostv1.DrainRequest) (*hostv1.DrainResponse, error) {
	if err := c.idle(ctx); err != nil {
		return nil, err
	}
	return &hostv1.DrainResponse{}, nil
}

// Stop ends the host after a drain, even when the caller stops waiting
// first: once asked, the host goes.
func (c *control) Stop(ctx context.Context, _ *hostv1.StopRequest) (*hostv1.StopResponse, error) {
	err := c.idle(ctx)
	log.Printf("group %s: stopping, as the deployer asked", c.h.cfg.GetGroup())
	c.h.stop(errStopped)
	if err != nil {
		return nil, err
	}
	return &hostv1.StopResponse{}, nil
}

// idle drains the host and waits until no call is in flight or ctx ends.
func (c *control) idle(ctx context.Context) error {
	c.h.drain()
	select {
	case <-c.h.calls.Done():
		return nil
	case <-ctx.Done():
		return status.Errorf(status.FromContextError(ctx.Err()).Code(), "group %s: %d calls still in flight: %v",
			c.h.cfg.GetGroup(), c.h.calls.InFlight(), ctx.Err())
	}
}
