package load

import (
	"math"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The ranks and coverages are scipy's (scipy 1.17.1, the project's venv):
//
//	from scipy.stats import binom
//	l = int(binom.ppf(0.025, n, q)); u = int(binom.ppf(0.975, n, q)) + 1
//	ok = 1 <= l and u <= n
//	coverage = binom.cdf(u - 1, n, q) - binom.cdf(l - 1, n, q)
func TestQuantileRanksAgainstScipy(t *testing.T) {
	for _, tc := range []struct {
		n      int64
		q      float64
		lo, hi int64
		cov    float64
		ok     bool
	}{
		{20, 0.5, 6, 15, 0.958611, true},
		{100, 0.5, 40, 61, 0.9648, true},
		{1000, 0.99, 983, 997, 0.976095, true},
		{1200, 0.99, 1181, 1195, 0.959387, true},
		{2000, 0.99, 1971, 1989, 0.957831, true},
		{5000, 0.999, 4990, 5000, 0.979629, true},
		{10000, 0.999, 9983, 9997, 0.975457, true},
		// Too few: the upper rank falls past the last sample.
		{200, 0.99, 195, 201, 0, false},
		{1200, 0.999, 1196, 1201, 0, false},
		{3000, 0.999, 2993, 3001, 0, false},
	} {
		lo, hi, cov, ok := quantileRanks(tc.n, tc.q, 0.95)
		if ok != tc.ok || lo != tc.lo || hi != tc.hi || math.Abs(cov-tc.cov) > 1e-6 {
			t.Errorf("quantileRanks(%d, %v) = %d, %d, %.6f, %v; scipy: %d, %d, %.6f, %v",
				tc.n, tc.q, lo, hi, cov, ok, tc.lo, tc.hi, tc.cov, tc.ok)
		}
	}
	for _, bad := range []struct {
		n    int64
		q, c float64
	}{{0, 0.99, 0.95}, {100, 1, 0.95}, {100, 0, 0.95}, {100, 0.5, 1}, {100, math.NaN(), 0.95}} {
		if _, _, _, ok := quantileRanks(bad.n, bad.q, bad.c); ok {
			t.Errorf("quantileRanks(%d, %v, %v) ok, want not", bad.n, bad.q, bad.c)
		}
	}
}

// The fewest samples that bound p99 and p99.9 at 95%, by scipy's rule
// above scanned over n = 1..8000 (ok holds from there on, and never
// before): 368 and 3688.
func TestMinSamplesFor(t *testing.T) {
	if got := minSamplesFor(0.99, 0.95, 1<<24); got != 368 {
		t.Errorf("p99 needs %d samples, scipy says 368", got)
	}
	if got := minSamplesFor(0.999, 0.95, 1<<24); got != 3688 {
		t.Errorf("p99.9 needs %d samples, scipy says 3688", got)
	}
}

// The values of 1..1000 µs, once each: rank k is k µs, exactly (a µs
// histogram holds values below 2048 without rounding), so the p99
// interval is [983, 997] µs. In ns, at 3 significant digits, the bounds
// may only widen, by at most 0.1%.
func TestQuantileCIFromHistogram(t *testing.T) {
	us := newHist()
	ns := hdr.New(1, int64(1e10), 3)
	for k := int64(1); k <= 1000; k++ {
		us.RecordValue(k)
		ns.RecordValue(k * 1000)
	}
	ci, ok := quantileCI(us, 1e-3, 0.99, 0.95)
	if !ok || ci.N != 1000 || ci.LoRank != 983 || ci.HiRank != 997 || ci.LoMs != 0.983 || ci.HiMs != 0.997 {
		t.Errorf("µs interval %+v, want ranks 983..997 = [0.983, 0.997] ms", ci)
	}
	ci, ok = quantileCI(ns, 1e-6, 0.99, 0.95)
	if !ok || ci.LoMs > 0.983 || ci.LoMs < 0.983*(1-1e-3) || ci.HiMs < 0.997 || ci.HiMs > 0.997*(1+1e-3) {
		t.Errorf("ns interval %+v, want [0.983, 0.997] ms widened by at most 0.1%%", ci)
	}
	if _, ok := quantileCI(us, 1e-3, 0.999, 0.95); ok {
		t.Error("p99.9 of 1,000 samples bounded; scipy's ranks say it cannot be")
	}
}

// judgeLagPercentile flags only intervals apart by more than the slack,
// and says why a percentile was not judged.
func TestJudgeLagPercentile(t *testing.T) {
	// k values of v (µs or ns), the rest at base.
	build := func(n int64, base, v int64, k int64, unit int64, lo, hi int64) *hdr.Histogram {
		h := hdr.New(lo, hi, 3)
		for i := int64(0); i < n; i++ {
			x := base
			if i >= n-k {
				x = v
			}
			h.RecordValue(x * unit)
		}
		return h
	}
	lagH := func(n, base, v, k int64) *hdr.Histogram { return build(n, base, v, k, 1, histMinUs, histMaxUs) }
	floorH := func(n, base, v, k int64) *hdr.Histogram { return build(n, base, v, k, 1000, 1, 1e10) }
	for _, tc := range []struct {
		name           string
		lag, floor     *hdr.Histogram
		p              float64
		judged, beyond bool
		note           string
	}{
		// 2,000: p99's ranks are 1971..1989; 30 slow sends fill 1971..2000.
		{"p99 apart", lagH(2000, 10, 2000, 30), floorH(2000, 100, 200, 30), 99, true, true, ""},
		// Slow sends at the floor's own tail: the intervals meet.
		{"p99 same tail", lagH(2000, 10, 200, 30), floorH(2000, 100, 200, 30), 99, true, false, ""},
		// Apart by less than the 0.05 ms slack: resolution, not evidence.
		{"within slack", lagH(2000, 10, 240, 30), floorH(2000, 100, 200, 30), 99, true, false, ""},
		// 5,000: p99.9's ranks are 4990..5000.
		{"p99.9 apart", lagH(5000, 10, 2000, 11), floorH(5000, 100, 500, 3), 99.9, true, true, ""},
		{"p99.9 of 2000", lagH(2000, 10, 2000, 3), floorH(5000, 100, 500, 3), 99.9, false, false,
			"p99.9 not judged: 2000 sends too few at 95% (an interval needs 3688)"},
		{"both short", lagH(1200, 10, 2000, 3), floorH(1200, 100, 500, 3), 99.9, false, false,
			"p99.9 not judged: 1200 sends and 1200 wake-ups of the timer loop too few at 95%"},
		{"floor short", lagH(2000, 10, 2000, 30), floorH(300, 100, 200, 3), 99, false, false,
			"p99 not judged: 300 wake-ups of the timer loop too few at 95% (an interval needs 368)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			li := judgeLagPercentile(tc.lag, tc.floor, tc.p)
			if li.Judged != tc.judged || li.Beyond != tc.beyond || li.Percentile != tc.p || li.Confidence != 0.95 || li.SlackMs != lagSlackMs {
				t.Errorf("%+v: want judged %v beyond %v", li, tc.judged, tc.beyond)
			}
			if tc.judged && (li.Lag == nil || li.Floor == nil) {
				t.Fatalf("judged without both intervals: %+v", li)
			}
			if tc.beyond && !(li.Lag.LoMs > li.Floor.HiMs+lagSlackMs) {
				t.Errorf("beyond with lag %+v, floor %+v", li.Lag, li.Floor)
			}
			if !strings.Contains(li.Note, tc.note) || (tc.note == "") != (li.Note == "") {
				t.Errorf("note %q, want %q", li.Note, tc.note)
			}
		})
	}
}
