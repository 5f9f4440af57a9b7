package load

import (
	"testing"
	"time"
)

// TestTally: the measured seconds' histograms and counts add up to the
// summary so far; warm-up seconds do not count.
func TestTally(t *testing.T) {
	tl := NewTally()
	second := func(elapsed time.Duration, warmup bool, values ...int64) Progress {
		h := newHist()
		for _, v := range values {
			_ = h.RecordValue(v)
		}
		return Progress{Elapsed: elapsed, Warmup: warmup, Requests: int64(len(values)), Errors: 1, Latency: h,
			ErrorClasses: map[string]int64{"http_500": 1}}
	}
	tl.Add(second(-time.Second, true, 99_000, 99_000))
	tl.Add(second(time.Second, false, 1000, 2000))
	tl.Add(second(2*time.Second, false, 3000, 4000))
	tot := tl.Summary().Operations[0]
	if tot.Name != "total" || tot.Count != 4 || tot.Errors != 2 || tot.RPS != 2 || tot.CompletedRPS != 2 {
		t.Errorf("total %+v, want 4 requests, 2 errors, 2/s", tot)
	}
	if tot.Latency.MaxMs < 3.99 || tot.Latency.MaxMs > 4.01 || tot.Latency.P50Ms < 1.99 || tot.Latency.P50Ms > 2.01 {
		t.Errorf("latency %+v, want p50 2 ms and max 4 ms (the warm-up's 99 ms left out)", tot.Latency)
	}
}
