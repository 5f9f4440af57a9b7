// Package inflight counts calls in flight behind a gate that can be closed
// to new calls, and tells when the last call has left. It is the shape of
// draining, whether of a host's listeners or of an endpoint a balancer
// drops from its set.
package inflight

import (
	"sync"
	"sync/atomic"
)

// closed marks a closed gate in the counter, above any real count, so that
// entering, leaving and closing each take one atomic operation: a gate sits
// on every call's path.
const closed = 1 << 62

// Gate admits calls until it is closed. The zero value is an open gate with
// no call in flight.
type Gate struct {
	n         atomic.Int64 // calls in flight, plus closed once closed
	makeDone  sync.Once
	done      chan struct{}
	closeDone sync.Once
}

// Enter admits a call and reports true, or reports false when the gate is
// closed. Every admitted call must Leave.
func (g *Gate) Enter() bool {
	if g.n.Add(1)&closed != 0 {
		// Refused: a caller that lost the race against Close undoes its
		// count, and may be the one that finds the gate empty.
		g.Leave()
		return false
	}
	return true
}

// Leave ends a call Enter admitted.
func (g *Gate) Leave() {
	if g.n.Add(-1) == closed {
		g.finish()
	}
}

// Close refuses every later call. Calls in flight go on; Done is closed
// when the last has left (at once, when none is in flight). Closing twice is
// harmless.
func (g *Gate) Close() {
	if g.n.Or(closed) == 0 {
		g.finish()
	}
}

// Closed reports whether Close was called.
func (g *Gate) Closed() bool { return g.n.Load()&closed != 0 }

// InFlight is the number of calls admitted and not yet left. A call refused
// by a closed gate may count for the instant it takes to refuse it.
func (g *Gate) InFlight() int { return int(g.n.Load() &^ closed) }

// Done is closed once the gate is closed and no call is in flight.
func (g *Gate) Done() <-chan struct{} { return g.doneChan() }

func (g *Gate) doneChan() chan struct{} {
	g.makeDone.Do(func() { g.done = make(chan struct{}) })
	return g.done
}

func (g *Gate) finish() { g.closeDone.Do(func() { close(g.doneChan()) }) }
