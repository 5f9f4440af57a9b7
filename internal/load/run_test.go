package load

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"
)

// runUnchecked runs cfg as Run does but without Validate, to drive the
// generator past the limits Validate enforces.
func runUnchecked(t testing.TB, cfg Config, tg *Target) (*Result, error) {
	t.Helper()
	r, err := newRunner(cfg, tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r.run(context.Background())
}

// TestLoadEndsOnTime: whatever the rate, a load ends within its duration
// plus the drain, even when the generator cannot keep up with the
// schedule (issue: --rate 1e12 on a 1 s duration ran for over 20 s, as
// the loop planned its way through every arrival of the window).
func TestLoadEndsOnTime(t *testing.T) {
	for _, rate := range []float64{1e12, math.Inf(1), 5e6} {
		t.Run(formatRate(rate), func(t *testing.T) {
			tg := &Target{Ops: []Op{noop("noop", 1)}}
			cfg := Config{Rate: rate, Duration: Duration(time.Second), Timeout: Duration(time.Second)}
			start := time.Now()
			res, err := runUnchecked(t, cfg, tg)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			// The drain bound is the timeout plus 3 s; a no-op target
			// needs none of it, so the run ends at the window's end.
			if limit := time.Second + 3*time.Second; took > limit {
				t.Fatalf("a 1 s load at %v/s took %v, more than %v", rate, took, limit)
			}
			if tot := mustOp(t, res, "total"); tot.Count == 0 {
				t.Errorf("nothing was sent")
			}
			t.Logf("%v/s: %v, %d sent", rate, took.Round(time.Millisecond), mustOp(t, res, "total").Count)
		})
	}
}

func formatRate(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }

// BenchmarkPacerCeiling measures how fast the open loop dispatches
// arrivals to a target that answers at once, which is where MaxRate comes
// from: it reports the share of planned arrivals sent in the window and
// the send lag. Each iteration is a 1 s run.
func BenchmarkPacerCeiling(b *testing.B) {
	for _, rate := range []float64{1e5, 4e5, 8e5, 1.6e6} {
		b.Run(formatRate(rate), func(b *testing.B) {
			for range b.N {
				res, err := runUnchecked(b, Config{Rate: rate, Duration: Duration(time.Second)}, &Target{Ops: []Op{noop("noop", 1)}})
				if err != nil {
					b.Fatal(err)
				}
				tot, _ := res.Op("total")
				b.ReportMetric(float64(tot.Count)/rate, "sent/planned")
				b.ReportMetric(res.Generator.LagP99Ms, "lag-p99-ms")
				res.Close()
			}
		})
	}
}
