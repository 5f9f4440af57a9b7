package capacity

import (
	"fmt"
	"time"

	"github.com/svclab/svclab/internal/load"
)

// A Cutter watches a running step's per-second progress and says when the
// step has already failed: when the figures so far break an SLO whatever
// the rest of the step brings. A step planned at rate r for d seconds
// ends with about n = r·d answers, so, for instance, a p99 limit is lost
// once more than n/100 answers were slower than it. Each second's median
// and p99 give a lower bound on how many answers of that second were
// slower than a limit (half of them when the median was, one in a
// hundred when the p99 was), and the bounds add up.
//
// Only the limits on all requests together ("total") are watched; those
// of single operations, and min_rps, are judged at the step's end.
type Cutter struct {
	limits  load.Limits
	planned float64 // answers the whole step should bring

	slow    map[string]float64 // limit key → answers known slower than it
	meanSum float64            // lower bound of the latency sum, ms
}

// NewCutter watches a step whose measurement should bring planned
// answers (the rate times the measurement's length).
func NewCutter(slo *load.Thresholds, planned float64) *Cutter {
	c := &Cutter{planned: planned, slow: map[string]float64{}}
	if slo != nil {
		c.limits = slo.Limits
	}
	return c
}

// quantiles are the latency limits a Cutter watches, with the share of
// answers each allows to be slower.
var quantiles = []struct {
	key   string
	limit func(*load.Limits) *float64
	tail  float64
}{
	{"p50_ms", func(l *load.Limits) *float64 { return l.P50Ms }, 0.5},
	{"p90_ms", func(l *load.Limits) *float64 { return l.P90Ms }, 0.1},
	{"p95_ms", func(l *load.Limits) *float64 { return l.P95Ms }, 0.05},
	{"p99_ms", func(l *load.Limits) *float64 { return l.P99Ms }, 0.01},
	{"p999_ms", func(l *load.Limits) *float64 { return l.P999Ms }, 0.001},
}

// Observe takes one second of progress and returns why the step has
// failed, or "" while it may still pass. Warm-up seconds are ignored.
func (c *Cutter) Observe(p load.Progress) string {
	if p.Warmup || c.planned <= 0 {
		return ""
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	p50, p99, n := ms(p.P50), ms(p.P99), float64(p.Requests)
	if p.Dropped > 0 {
		return fmt.Sprintf("%d arrivals dropped after %.0f s: more requests were outstanding than load.max_inflight allows", p.Dropped, p.Elapsed.Seconds())
	}
	if l := c.limits.ErrorRate; l != nil && float64(p.TotalErrors) > *l*c.planned {
		return fmt.Sprintf("%d errors after %.0f s, more than error_rate %g allows of the %.0f answers planned", p.TotalErrors, p.Elapsed.Seconds(), *l, c.planned)
	}
	if l := c.limits.MaxMs; l != nil && p99 > *l {
		return fmt.Sprintf("a second's p99 was %.1f ms after %.0f s, so max_ms %g is broken", p99, p.Elapsed.Seconds(), *l)
	}
	for _, q := range quantiles {
		l := q.limit(&c.limits)
		if l == nil {
			continue
		}
		switch {
		case p50 > *l:
			c.slow[q.key] += n * 0.5
		case p99 > *l:
			c.slow[q.key] += n * 0.01
		}
		if allowed := q.tail * c.planned; c.slow[q.key] > allowed {
			return fmt.Sprintf("after %.0f s at least %.0f answers were slower than %s %g, more than the %.0f the whole step allows", p.Elapsed.Seconds(), c.slow[q.key], q.key, *l, allowed)
		}
	}
	if l := c.limits.MeanMs; l != nil {
		// Half of a second's answers took at least its median.
		c.meanSum += n * 0.5 * p50
		if c.meanSum/c.planned > *l {
			return fmt.Sprintf("after %.0f s the latency so far already puts the mean above mean_ms %g", p.Elapsed.Seconds(), *l)
		}
	}
	return ""
}
