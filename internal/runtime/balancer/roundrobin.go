package balancer

import (
	"math/rand/v2"
	"sync/atomic"
)

// RoundRobin gives each healthy SubConn of the set a call in turn; a sick
// one (health.go) is skipped while any other is healthy, and its turn goes
// to the next. Like
// grpc-go's round_robin it starts at a random place: callers started
// together (replicas of one group) then do not all send their first call to
// the same endpoint.
var RoundRobin PickerBuilder = roundRobinBuilder{}

type roundRobinBuilder struct{}

func (roundRobinBuilder) Build(subConns []*SubConn) Picker {
	p := &roundRobin{subConns: subConns}
	p.next.Store(rand.Uint64N(uint64(len(subConns))))
	return p
}

type roundRobin struct {
	subConns []*SubConn
	next     atomic.Uint64
}

func (p *roundRobin) Pick(PickInfo) (*SubConn, error) {
	n := p.next.Add(1) - 1
	l := uint64(len(p.subConns))
	for i := range l {
		if sc := p.subConns[(n+i)%l]; sc.Healthy() {
			if i > 0 {
				// The next call starts after this one, so the sick
				// endpoint's turn is not always its neighbour's.
				p.next.CompareAndSwap(n+1, n+i+1)
			}
			return sc, nil
		}
	}
	// Every endpoint is sick: try them in turn rather than fail every
	// call until a probe succeeds.
	return p.subConns[n%l], nil
}
