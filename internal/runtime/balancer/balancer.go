// Package balancer spreads a peer's calls over a set of endpoints, on every
// svclab transport alike.
//
// It follows grpc-go's split of the job. A resolver pushes address updates:
// here whoever knows the set (the host, told by its deployer) calls Update.
// A balancer keeps one sub-connection per address, dialled on first use: a
// SubConn wraps one transport.Conn. A picker chooses the SubConn of each
// call; it is rebuilt on every update, sees each SubConn's live state (calls
// outstanding, connectivity), and round robin is the default. grpc-go's own
// balancers cannot be used because their sub-connections are grpc-go's HTTP/2
// transports, and svclab's calls may travel over http or net/rpc.
//
// An update swaps the set without disturbing calls in flight: a call keeps
// the SubConn it was given, and a SubConn dropped from the set is closed once
// its calls in flight have finished. Update returns once those calls have
// finished too (for at most Options.RetireWait), so that whoever pushed the
// set knows the dropped endpoints get nothing more from this balancer and
// may stop them: a call picked just before the update may still be on its
// way, and a server that stopped admitting calls would refuse it.
package balancer

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/inflight"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// Address is one endpoint of a set, in the form a balancer dials, as
// grpc-go's resolver.Address is.
type Address struct {
	// Addr names the endpoint uniquely within its set; an update keeps the
	// SubConn of every Addr it lists again.
	Addr string
	// Dial connects to the endpoint. It is called on the first call the
	// endpoint is picked for, and again after a failed dial.
	Dial func(ctx context.Context) (transport.Conn, error)
}

// PickInfo describes the call a picker chooses for.
type PickInfo struct {
	FullMethodName string
	Ctx            context.Context
}

// Picker chooses the SubConn of each call. Pick is called concurrently. An
// error it returns fails the call and should be a status error.
type Picker interface {
	Pick(info PickInfo) (*SubConn, error)
}

// PickerBuilder makes the picker of a set; it is called on every update
// with the set's SubConns in the update's order, never with none.
type PickerBuilder interface {
	Build(subConns []*SubConn) Picker
}

// Options configure a Balancer.
type Options struct {
	// Picker builds the pickers; nil means RoundRobin.
	Picker PickerBuilder
	// ProbeMin and ProbeMax bound the backoff between health probes of a
	// sick endpoint (health.go); zero means DefaultProbeMin and
	// DefaultProbeMax.
	ProbeMin, ProbeMax time.Duration
	// RetireWait bounds how long Update waits for the calls in flight on
	// the endpoints it drops; zero means DefaultRetireWait.
	RetireWait time.Duration
}

// DefaultRetireWait is Options.RetireWait's default: longer than a call
// takes from its pick to its server on a loaded machine, short enough that
// a long call (or a stream) in flight to a dropped endpoint does not hold
// up its deployer for long; its server drains it.
const DefaultRetireWait = 2 * time.Second

// Balancer is a grpc.ClientConnInterface over a dynamic set of endpoints.
type Balancer struct {
	name       string
	builder    PickerBuilder
	probe      [2]time.Duration
	retireWait time.Duration

	mu     sync.Mutex // serialises Update and Close
	subs   map[string]*SubConn
	closed bool

	// picked is what calls read: published whole, so a call sees one set.
	picked atomic.Pointer[pickState]
}

type pickState struct {
	picker Picker // nil when the set is empty
	closed bool
}

// New returns a balancer with an empty set; name (the peer) is for errors.
func New(name string, opts Options) *Balancer {
	b := &Balancer{name: name, builder: opts.Picker, subs: map[string]*SubConn{}}
	if b.builder == nil {
		b.builder = RoundRobin
	}
	b.probe = [2]time.Duration{cmp.Or(opts.ProbeMin, DefaultProbeMin), cmp.Or(opts.ProbeMax, DefaultProbeMax)}
	b.retireWait = cmp.Or(opts.RetireWait, DefaultRetireWait)
	b.picked.Store(&pickState{})
	return b
}

// Update replaces the set with addrs. SubConns of addresses listed before
// are kept, with their connections; those not listed any more take no new
// calls and are closed once their calls in flight finish. Update returns
// once no call is in flight on them, or after Options.RetireWait: new calls
// go to the new set at once, and those already given a dropped endpoint,
// even if not yet sent, have been answered. An address listed twice is an
// error, and then nothing changes.
func (b *Balancer) Update(addrs []Address) error {
	retired, err := b.swap(addrs)
	if err != nil {
		return err
	}
	if len(retired) == 0 {
		return nil
	}
	wait := time.NewTimer(b.retireWait)
	defer wait.Stop()
	for _, sc := range retired {
		select {
		case <-sc.calls.Done():
		case <-wait.C:
			return nil // those left are their servers' to drain
		}
	}
	return nil
}

// swap publishes the picker of addrs and retires the SubConns it drops,
// which it returns.
func (b *Balancer) swap(addrs []Address) ([]*SubConn, error) {
	if err := Check(addrs); err != nil {
		return nil, fmt.Errorf("peer %s: %w", b.name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("peer %s: balancer is closed", b.name)
	}
	next := make(map[string]*SubConn, len(addrs))
	list := make([]*SubConn, 0, len(addrs))
	for _, a := range addrs {
		sc := b.subs[a.Addr]
		if sc == nil {
			sc = &SubConn{addr: a, probeMin: b.probe[0], probeMax: b.probe[1]}
		}
		next[a.Addr] = sc
		list = append(list, sc)
	}
	st := &pickState{}
	if len(list) > 0 {
		st.picker = b.builder.Build(list)
	}
	// Publish before retiring, so a call that picked a retired SubConn
	// finds the new set when it tries again.
	b.picked.Store(st)
	var retired []*SubConn
	for addr, sc := range b.subs {
		if next[addr] == nil {
			sc.retire()
			retired = append(retired, sc)
		}
	}
	b.subs = next
	return retired, nil
}

// Check reports what Update would refuse in addrs: an address listed twice.
func Check(addrs []Address) error {
	seen := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		if seen[a.Addr] {
			return fmt.Errorf("endpoint %s listed twice", a.Addr)
		}
		seen[a.Addr] = true
	}
	return nil
}

// Close refuses new calls and closes every connection once its calls in
// flight have finished.
func (b *Balancer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.picked.Store(&pickState{closed: true})
	for _, sc := range b.subs {
		sc.retire()
	}
	b.subs = nil
	return nil
}

// pick returns the SubConn for a call, with the call counted on it.
func (b *Balancer) pick(ctx context.Context, method string) (*SubConn, error) {
	for {
		st := b.picked.Load()
		switch {
		case st.closed:
			return nil, status.Errorf(codes.Unavailable, "peer %s: connection is closed", b.name)
		case st.picker == nil:
			return nil, status.Errorf(codes.Unavailable, "peer %s: no endpoints", b.name)
		}
		sc, err := st.picker.Pick(PickInfo{FullMethodName: method, Ctx: ctx})
		if err != nil {
			return nil, err
		}
		if sc.calls.Enter() {
			return sc, nil
		}
		// Retired between the load and Enter; a newer set is published.
	}
}

// Invoke performs a unary call on the SubConn the picker chooses.
func (b *Balancer) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	sc, err := b.pick(ctx, method)
	if err != nil {
		return err
	}
	defer sc.calls.Leave()
	c, err := sc.connect(ctx)
	if err == nil {
		err = c.Invoke(ctx, method, args, reply, opts...)
	}
	sc.observe(err)
	return err
}

// NewStream opens a stream on the SubConn the picker chooses. The stream
// counts as outstanding until RecvMsg returns an error (io.EOF included) or
// ctx ends, which is how grpc-go defines a stream's end.
func (b *Balancer) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	sc, err := b.pick(ctx, method)
	if err != nil {
		return nil, err
	}
	c, err := sc.connect(ctx)
	if err != nil {
		sc.observe(err)
		sc.calls.Leave()
		return nil, err
	}
	s, err := c.NewStream(ctx, desc, method, opts...)
	if err != nil {
		sc.observe(err)
		sc.calls.Leave()
		return nil, err
	}
	cs := &stream{ClientStream: s}
	var once sync.Once
	cs.end = func() { once.Do(sc.calls.Leave) }
	stop := context.AfterFunc(ctx, cs.end)
	cs.stop = stop
	return cs, nil
}

type stream struct {
	grpc.ClientStream
	end  func()
	stop func() bool
}

func (s *stream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.stop()
		s.end()
	}
	return err
}

// SubConn is one endpoint of a set and its connection.
type SubConn struct {
	addr  Address
	calls inflight.Gate

	conn   atomic.Pointer[transport.Conn]
	mu     sync.Mutex // serialises dialing and closing
	failed atomic.Bool
	// sick is set by a call that failed UNAVAILABLE and cleared by a
	// SERVING health probe (health.go).
	sick               atomic.Bool
	probeMin, probeMax time.Duration
	// picks counts the calls a LeastOutstanding picker gave it.
	picks atomic.Uint64
}

// Addr is the endpoint's address.
func (s *SubConn) Addr() string { return s.addr.Addr }

// Outstanding is the number of calls in flight on the endpoint.
func (s *SubConn) Outstanding() int { return s.calls.InFlight() }

// State is the endpoint's connectivity: Idle before its first dial, Ready
// once connected and healthy, TransientFailure after a failed dial (the
// next call dials again) or while sick, Shutdown once retired.
func (s *SubConn) State() connectivity.State {
	switch {
	case s.calls.Closed():
		return connectivity.Shutdown
	case s.sick.Load():
		return connectivity.TransientFailure
	case s.conn.Load() != nil:
		return connectivity.Ready
	case s.failed.Load():
		return connectivity.TransientFailure
	}
	return connectivity.Idle
}

// connect returns the endpoint's connection, dialling it on first use. The
// caller holds a call on s, so s cannot be closed meanwhile.
func (s *SubConn) connect(ctx context.Context) (transport.Conn, error) {
	if c := s.conn.Load(); c != nil {
		return *c, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.conn.Load(); c != nil {
		return *c, nil
	}
	c, err := s.addr.Dial(ctx)
	if err != nil {
		s.failed.Store(true)
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Errorf(codes.Unavailable, "dial %s: %v", s.addr.Addr, err)
	}
	s.failed.Store(false)
	s.conn.Store(&c)
	return c, nil
}

// retire refuses new calls and closes the connection once the calls in
// flight have finished.
func (s *SubConn) retire() {
	s.calls.Close()
	go func() {
		<-s.calls.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		if c := s.conn.Swap(nil); c != nil {
			_ = (*c).Close()
		}
	}()
}
