package balancer

import (
	"math/rand/v2"
	"sync/atomic"
)

// LeastOutstanding sends each call to the healthy SubConn with the fewest
// calls in flight from this caller, as Envoy's and grpc-go's least_request
// balancers do. They sample two endpoints at random (the power of two
// choices), which matters for hundreds of endpoints; a group here has a
// few dozen at most, so every endpoint is looked at. A tie goes to the
// endpoint picked least often, so callers that never queue still spread
// their calls evenly.
var LeastOutstanding PickerBuilder = leastOutstandingBuilder{}

type leastOutstandingBuilder struct{}

func (leastOutstandingBuilder) Build(subConns []*SubConn) Picker {
	p := &leastOutstanding{subConns: subConns}
	p.next.Store(rand.Uint64N(uint64(len(subConns))))
	return p
}

type leastOutstanding struct {
	subConns []*SubConn
	next     atomic.Uint64 // where the scan starts, for sick-only sets
}

func (p *leastOutstanding) Pick(PickInfo) (*SubConn, error) {
	n := len(p.subConns)
	start := int((p.next.Add(1) - 1) % uint64(n))
	var best *SubConn
	var bestCalls int
	var bestPicks uint64
	for i := range n {
		sc := p.subConns[(start+i)%n]
		if !sc.Healthy() {
			continue
		}
		c, picks := sc.Outstanding(), sc.picks.Load()
		if best == nil || c < bestCalls || (c == bestCalls && picks < bestPicks) {
			best, bestCalls, bestPicks = sc, c, picks
		}
	}
	if best == nil {
		// Every endpoint is sick: try them in turn rather than fail
		// every call until a probe succeeds.
		best = p.subConns[start]
	}
	best.picks.Add(1)
	return best, nil
}

// Policies maps each value of deploy.balancer to its picker.
var Policies = map[string]PickerBuilder{
	"round_robin":       RoundRobin,
	"least_outstanding": LeastOutstanding,
}
