package resilience

import (
	"sync"
	"time"
)

// budget is a retry budget in the manner of Finagle's RetryBudget: over a
// sliding window, retries may be up to ratio of the calls made plus a
// reserve of minPerSecond per second of the window. Calls and retries are
// counted in one-second buckets, so the window slides by seconds.
type budget struct {
	ratio   float64
	reserve float64

	mu      sync.Mutex
	calls   []uint64
	retries []uint64
	// second is the Unix second of the newest bucket.
	second int64
}

func newBudget(window time.Duration, ratio, minPerSecond float64) *budget {
	n := max(int(window/time.Second), 1)
	return &budget{ratio: ratio, reserve: minPerSecond * float64(n), calls: make([]uint64, n), retries: make([]uint64, n)}
}

// advance clears the buckets that left the window by now; b.mu is held.
func (b *budget) advance(now time.Time) int {
	sec := now.Unix()
	n := int64(len(b.calls))
	if gap := sec - b.second; gap > 0 {
		for i := int64(1); i <= min(gap, n); i++ {
			j := (b.second + i) % n
			b.calls[j], b.retries[j] = 0, 0
		}
		b.second = sec
	}
	return int(sec % n)
}

// deposit counts a call.
func (b *budget) deposit(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[b.advance(now)]++
}

// withdraw counts a retry when the budget allows one, and reports whether
// it did.
func (b *budget) withdraw(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.advance(now)
	var calls, retries uint64
	for j := range b.calls {
		calls += b.calls[j]
		retries += b.retries[j]
	}
	if float64(retries+1) > b.ratio*float64(calls)+b.reserve {
		return false
	}
	b.retries[i]++
	return true
}
