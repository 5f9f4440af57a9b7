package conformance

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	selectapp "github.com/svclab/svclab/apps/select"
	"github.com/svclab/svclab/internal/runtime/transport"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
	selectorpb "github.com/svclab/svclab/proto/selector"
)

// backend is one replica of the selector a frontend under test balances
// over: a Go Selector on svclab's own transport with the health service,
// counting the calls it gets; it can hold calls (to give the caller
// outstanding calls on it), be stopped, and be started again at its address.
type backend struct {
	selectorpb.UnimplementedSelectorServer
	tr, addr string

	calls   atomic.Int64
	holding atomic.Bool
	held    atomic.Int64
	release chan struct{}

	mu  sync.Mutex
	srv transport.Server
}

func startBackend(t *testing.T, tr string) *backend {
	t.Helper()
	b := &backend{tr: tr, release: make(chan struct{})}
	b.serve(t, "127.0.0.1:0")
	t.Cleanup(func() {
		b.unhold()
		b.stop()
	})
	return b
}

// serve listens at addr (the same address again after stop).
func (b *backend) serve(t *testing.T, addr string) {
	t.Helper()
	trp, err := transport.Lookup(b.tr)
	if err != nil {
		t.Fatal(err)
	}
	var lis net.Listener
	for end := time.Now().Add(5 * time.Second); ; {
		if lis, err = net.Listen("tcp", addr); err == nil || time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("backend listen %s: %v", addr, err)
	}
	b.addr = lis.Addr().String()
	srv := trp.NewServer(transport.ServerOptions{})
	selectorpb.RegisterSelectorServer(srv, b)
	desc := healthpb.Health_ServiceDesc
	desc.Streams = nil // only the grpc transport carries streams; Check is unary
	srv.RegisterService(&desc, health.NewServer())
	go srv.Serve(lis)
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
}

func (b *backend) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		b.srv.Stop()
		b.srv = nil
	}
}

func (b *backend) hold() { b.holding.Store(true) }

func (b *backend) unhold() {
	if b.holding.CompareAndSwap(true, false) {
		close(b.release)
	}
}

func (b *backend) Select(ctx context.Context, in *selectorpb.SelectRequest) (*selectorpb.SelectResponse, error) {
	b.calls.Add(1)
	if b.holding.Load() {
		b.held.Add(1)
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	v := in.GetValues()
	return &selectorpb.SelectResponse{Positions: []int32{0, 0, 0}, Values: []int32{v[0], v[0], v[0]}}, nil
}

// TestBalancing checks that every implementation honours
// transport_options.balancer and ejects an endpoint that is gone, as the Go
// host's internal/runtime/balancer does: a frontend calls a selector of
// three replicas, and
//   - sequential calls spread evenly (within ±10%) under either policy;
//   - with one replica holding its calls, round robin still gives it its
//     turn (4 of 12) while least_outstanding gives it none after the first;
//   - a stopped replica costs at most the one call that found it gone, the
//     others take its share, and it gets calls again once it serves anew
//     (the health probe).
func TestBalancing(t *testing.T) {
	for _, im := range impls {
		t.Run(im.lang, func(t *testing.T) {
			argv := im.argv(t)
			for _, tr := range transports {
				for _, policy := range []string{"round_robin", "least_outstanding"} {
					t.Run(tr+"/"+policy, func(t *testing.T) {
						t.Parallel()
						balanceCase(t, im, argv, tr, policy)
					})
				}
			}
		})
	}
}

func balanceCase(t *testing.T, im impl, argv []string, tr, policy string) {
	bs := []*backend{startBackend(t, tr), startBackend(t, tr), startBackend(t, tr)}
	set := &hostv1.EndpointSet{}
	for _, b := range bs {
		set.Endpoints = append(set.Endpoints, &hostv1.Endpoint{Transport: tr, Network: "tcp", Addr: b.addr})
	}
	cfg := hostConfig(selectapp.Name, selectapp.Frontend, tr, nil)
	cfg.Peers = map[string]*hostv1.EndpointSet{selectapp.Selector: set}
	cfg.TransportOptions = &hostv1.TransportOptions{Balancer: policy}
	p := startHost(t, im, argv, cfg)
	conn := dial(t, tr, p.addrs[selectapp.Frontend])
	call := func(ctx context.Context) error {
		return conn.Invoke(ctx, selectorpb.Frontend_Select_FullMethodName,
			&selectorpb.SelectRequest{Values: []int32{7, 8, 9}}, new(selectorpb.SelectResponse))
	}
	counts := func() [3]int64 {
		return [3]int64{bs[0].calls.Load(), bs[1].calls.Load(), bs[2].calls.Load()}
	}
	since := func(before [3]int64) [3]int64 {
		now := counts()
		return [3]int64{now[0] - before[0], now[1] - before[1], now[2] - before[2]}
	}

	// Spread.
	const n = 60
	before := counts()
	for i := range n {
		if err := call(ctxTimeout(t, callTimeout)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	got := since(before)
	for i, c := range got {
		if c < n/3*9/10 || c > n/3*11/10 {
			t.Errorf("%d sequential calls spread %v over the replicas; replica %d is outside %d ± 10%%", n, got, i, n/3)
		}
	}

	// Outstanding calls: replica 0 holds every call it gets.
	bs[0].hold()
	before = counts()
	var wg sync.WaitGroup
	const m = 12
	for i := range m {
		held := bs[0].held.Load()
		done := make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			done <- call(ctxTimeout(t, callTimeout))
		}()
		// Next call once this one has answered or is held at replica 0.
		for end := time.Now().Add(callTimeout); ; {
			if bs[0].held.Load() > held {
				break
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("call %d with replica 0 holding: %v", i, err)
				}
			case <-time.After(2 * time.Millisecond):
				if time.Now().Before(end) {
					continue
				}
				t.Fatalf("call %d with replica 0 holding neither answered nor reached replica 0", i)
			}
			break
		}
	}
	got = since(before)
	bs[0].unhold()
	wg.Wait()
	want := int64(m / 3)
	if policy == "least_outstanding" {
		want = 1 // after its first, replica 0 always has the most in flight
	}
	if got[0] != want || got[1]+got[2] != m-want {
		t.Errorf("%s with replica 0 holding its calls: %d calls spread %v, want %d at replica 0", policy, m, got, want)
	}

	// Ejection: replica 2 stops.
	addr2 := bs[2].addr
	bs[2].stop()
	before = counts()
	failed := 0
	for range 30 {
		if err := call(ctxTimeout(t, callTimeout)); err != nil {
			failed++
			wantStatus(t, "a call that found replica 2 gone", err, codes.Unavailable, "")
		}
	}
	got = since(before)
	// Round robin alternates the two left; least_outstanding first evens
	// out the picks replica 0 missed while it held its calls.
	even := policy == "least_outstanding" || (got[0] >= 13 && got[1] >= 13)
	if failed > 1 || got[2] != 0 || got[0]+got[1] != int64(30-failed) || !even {
		t.Errorf("replica 2 stopped: %d of 30 calls failed (want at most 1), spread %v (want none at replica 2, the rest at 0 and 1)", failed, got)
	}

	// Rejoin: replica 2 serves again at its address; the probe finds it.
	bs[2].serve(t, addr2)
	before = counts()
	deadline := time.Now().Add(5 * time.Second)
	for since(before)[2] == 0 && time.Now().Before(deadline) {
		if err := call(ctxTimeout(t, callTimeout)); err != nil {
			t.Fatalf("call after replica 2 came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := since(before); got[2] == 0 {
		t.Errorf("replica 2 serving again got none of %v calls in 5 s: its health probe never let it back", got)
	}
}
