package load

import (
	"sync"
	"time"

	"github.com/svclab/svclab/internal/warn"
)

// A stall is a stretch of an open loop's window in which requests were
// outstanding and new arrivals kept falling due, yet none finished: the
// system under test stopped answering. A run that lived through one can
// still look fine in its percentiles (the requests stuck in it are a few
// of a thousand), so it is named in its warnings.

// Thresholds of a stall: no answer for stallMin while at least
// stallArrivals arrivals fell due after the silence began. The arrivals
// keep a low rate from counting as a stall: at 2 req/s a second without
// an answer is routine, while five arrivals none of which finished, nor
// any request before them, is not something a service that answers does.
const (
	stallMin      = time.Second
	stallArrivals = 5
)

// stallWatch follows an open loop's arrivals and answers. Its mutex is
// taken once per arrival and once per answer.
type stallWatch struct {
	mu           sync.Mutex
	mstart, mend int64 // the window, ns since the run's base time
	outstanding  int
	// silentFrom is when the current silence began: the last answer with
	// requests still outstanding, or the send that ended a time with none
	// outstanding; -1 with none outstanding.
	silentFrom int64
	due        int // arrivals since silentFrom
	// the longest silence in the window that counts as a stall
	longest, longestFrom int64
}

func newStallWatch(mstart, mend int64) *stallWatch {
	return &stallWatch{mstart: mstart, mend: mend, silentFrom: -1}
}

// arrival notes an arrival at t, sent or dropped (max_inflight).
func (w *stallWatch) arrival(t int64, sent bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.silentFrom >= 0 {
		w.due++
	}
	if sent {
		w.outstanding++
		if w.outstanding == 1 {
			w.silentFrom, w.due = t, 0
		}
	}
}

// answered notes that a sent arrival finished at t.
func (w *stallWatch) answered(t int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.close(t)
	w.outstanding = max(w.outstanding-1, 0)
	w.silentFrom, w.due = -1, 0
	if w.outstanding > 0 {
		w.silentFrom = t
	}
}

// close ends the current silence at t, keeping it when it is the longest
// stall of the window so far (the parts outside the window do not count).
func (w *stallWatch) close(t int64) {
	if w.silentFrom < 0 || w.due < stallArrivals {
		return
	}
	from, t := max(w.silentFrom, w.mstart), min(t, w.mend)
	if d := t - from; d >= int64(stallMin) && d > w.longest {
		w.longest, w.longestFrom = d, from
	}
}

// warning ends the watch at the window's end and names the longest stall;
// false without one.
func (w *stallWatch) warning(end int64) (warn.Warning, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.close(end)
	if w.longest == 0 {
		return warn.Warning{}, false
	}
	return warn.Newf(warn.Stalled, "no answer for %.1f s from T+%.1f s of the window, while requests were outstanding and new ones fell due: the system under test stopped answering, and its latencies hide it",
		float64(w.longest)/1e9, float64(w.longestFrom-w.mstart)/1e9), true
}
