package balancer

import (
	"math/rand/v2"
	"sync/atomic"
)

// RoundRobin gives each SubConn of the set a call in turn, whatever its
// state, so a dead endpoint fails only the calls that fall to it. Like
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
	return p.subConns[n%uint64(len(p.subConns))], nil
}
