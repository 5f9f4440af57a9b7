package capacity

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/load"
)

func ptr(v float64) *float64 { return &v }

// queue is a synthetic service: a single server of capacity k answers per
// second whose p99 latency is service/(1-ρ), ρ = rate/k, as an M/M/1
// queue's response time grows, and unbounded at or above k. Against a p99
// limit L its knee is k·(1 - service/L), derived by hand from that curve.
type queue struct {
	k, serviceMs float64
	steps        []float64
	// bottleneckAbove flags the generator at rates above it (0: never).
	bottleneckAbove float64
	// flaky fails the n-th step (1-based) whatever its rate.
	flaky map[int]bool
}

func (q *queue) knee(limitMs float64) float64 { return q.k * (1 - q.serviceMs/limitMs) }

func (q *queue) step(_ context.Context, rate float64) (Measurement, error) {
	q.steps = append(q.steps, rate)
	p99, cut := math.Inf(1), ""
	if rate < q.k {
		p99 = q.serviceMs * q.k / (q.k - rate)
	} else {
		// The queue grows without bound: a Cutter ends such a step.
		cut = "the queue grows without bound"
	}
	if q.flaky[len(q.steps)] {
		p99 = 1e6
	}
	p99 = math.Min(p99, 60_000)
	const dur = 2.0
	n := int64(rate * dur)
	m := Measurement{CutShort: cut, Summary: load.Summary{DurationS: dur, Operations: []load.Operation{{
		Name: "total", Kind: "total", Count: n, RPS: rate, CompletedRPS: math.Min(rate, q.k),
		Latency: load.Stats{P50Ms: q.serviceMs, P99Ms: p99, MaxMs: p99},
	}}}}
	if q.bottleneckAbove > 0 && rate > q.bottleneckAbove {
		// A generator out of CPU sends half the rate, and late.
		m.Generator = load.Generator{Bottleneck: true, Reason: "the generator used 100% CPU", LagMaxMs: 1000}
		m.Summary.Operations[0].RPS = rate / 2
	}
	return m, nil
}

func p99SLO(ms float64) *load.Thresholds {
	return &load.Thresholds{Limits: load.Limits{P99Ms: ptr(ms)}}
}

func TestSearchFindsTheKnee(t *testing.T) {
	for _, tc := range []struct {
		name      string
		k         float64
		start     float64
		precision float64
	}{
		{"from below", 1234, 50, 0.05},
		{"from the knee's grid point", 1000, 50, 0.05}, // the knee is exactly 800 = 50·2^4
		{"from above", 500, 3000, 0.05},
		{"fine precision", 777, 10, 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &queue{k: tc.k, serviceMs: 10}
			knee := q.knee(50)
			var reported []Step
			out, err := Search(context.Background(), Settings{Start: tc.start, Precision: tc.precision}, p99SLO(50), q.step,
				func(s Step, _ *Outcome) { reported = append(reported, s) })
			if err != nil {
				t.Fatal(err)
			}
			if out.Stop != Converged {
				t.Fatalf("stop %s (%s), want converged", out.Stop, out.StopDetail)
			}
			if out.Rate > knee || out.High <= knee {
				t.Fatalf("interval [%v, %v) does not hold the knee %v", out.Rate, out.High, knee)
			}
			if w := (out.High - out.Rate) / out.Rate; w > tc.precision {
				t.Fatalf("interval [%v, %v) is %.3f wide, want at most %v", out.Rate, out.High, w, tc.precision)
			}
			if len(reported) != len(out.Steps) || len(out.Steps) != len(q.steps) {
				t.Fatalf("%d steps run, %d recorded, %d reported", len(q.steps), len(out.Steps), len(reported))
			}
			last := out.Steps[len(out.Steps)-DefaultConfirm:]
			for _, s := range last {
				if s.Phase != Confirm || s.Rate != out.Rate || !s.Pass {
					t.Fatalf("last steps %+v: want %d passing confirmations at %v", last, DefaultConfirm, out.Rate)
				}
			}
			for i, s := range out.Steps {
				if s.Index != i+1 {
					t.Fatalf("step %d has index %d", i+1, s.Index)
				}
				if s.Pass == (s.Rate > knee) {
					t.Fatalf("step at %v: pass=%v, but the knee is %v", s.Rate, s.Pass, knee)
				}
			}
		})
	}
}

// TestSearchSteps checks the exact sequence for a knee of 800 from 50:
// doubling to the first failure, then halving the interval; a failure
// at full length is rechecked once, one cut short is not.
func TestSearchSteps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flaky  map[int]bool
		retry  int
		want   []float64
		phases map[int]Phase // by 1-based step
	}{
		// 800 passes (p99 exactly 50), 1600 fails; then 1200, 1000 (cut
		// short: at or above k), 900, 850, 825 fail twice each, and
		// (825-800)/800 = 3.1% <= 5%; 800 is confirmed twice.
		{"", nil, 0, []float64{50, 100, 200, 400, 800, 1600, 1200, 1000, 900, 900, 850, 850, 825, 825, 800, 800},
			map[int]Phase{1: Bracket, 6: Bracket, 7: Bisect, 9: Bisect, 10: Recheck, 15: Confirm, 16: Confirm}},
		{"no rechecks", nil, -1, []float64{50, 100, 200, 400, 800, 1600, 1200, 1000, 900, 850, 825, 800, 800}, nil},
		// An outlier fails the second step; its recheck passes and the
		// bracket goes on.
		{"an outlier", map[int]bool{2: true}, 0, []float64{50, 100, 100, 200, 400, 800, 1600, 1200, 1000, 900, 900, 850, 850, 825, 825, 800, 800},
			map[int]Phase{2: Bracket, 3: Recheck, 4: Bracket}},
	} {
		q := &queue{k: 1000, serviceMs: 10, flaky: tc.flaky}
		out, err := Search(context.Background(), Settings{Start: 50, Retry: tc.retry}, p99SLO(50), q.step, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(q.steps, tc.want) {
			t.Fatalf("%s: steps %v, want %v", tc.name, q.steps, tc.want)
		}
		for i, ph := range tc.phases {
			if out.Steps[i-1].Phase != ph {
				t.Errorf("%s: step %d is %s, want %s", tc.name, i, out.Steps[i-1].Phase, ph)
			}
		}
		if out.Rate != 800 || out.High != 825 {
			t.Fatalf("%s: answer [%v, %v), want [800, 825)", tc.name, out.Rate, out.High)
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSearchConfirmationFails: a pass that does not hold when repeated is
// not the answer; the search goes on below it.
func TestSearchConfirmationFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start float64
		flaky int     // the first confirmation of 800
		next  float64 // the step after it
	}{
		// 400 was the highest other pass, so the search bisects [400, 800).
		{"a lower pass is left", 50, 15, 600},
		// 800 was the only pass, so the bracket goes down from it.
		{"no lower pass is left", 800, 11, 400},
	} {
		q := &queue{k: 1000, serviceMs: 10, flaky: map[int]bool{tc.flaky: true}}
		out, err := Search(context.Background(), Settings{Start: tc.start}, p99SLO(50), q.step, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Steps[tc.flaky-1].Phase != Confirm || out.Steps[tc.flaky-1].Rate != 800 {
			t.Fatalf("%s: step %d is %+v, want the first confirmation of 800", tc.name, tc.flaky, out.Steps[tc.flaky-1])
		}
		if out.Stop != Converged || out.Rate >= 800 || out.High != 800 || out.Rate < 800*(1-DefaultPrecision) {
			t.Fatalf("%s: after a failed confirmation at 800: [%v, %v) %s, want just below 800", tc.name, out.Rate, out.High, out.Stop)
		}
		if q.steps[tc.flaky] != tc.next {
			t.Fatalf("%s: steps %v: want %v after the failed confirmation", tc.name, q.steps, tc.next)
		}
	}
}

func TestSearchStops(t *testing.T) {
	fail := errors.New("group hop1 exited")
	for _, tc := range []struct {
		name     string
		q        *queue
		settings Settings
		step     func(q *queue) StepFunc
		stop     StopReason
		rate     float64
		err      error
	}{
		{name: "generator bottleneck", q: &queue{k: 1000, serviceMs: 10, bottleneckAbove: 300},
			settings: Settings{Start: 50}, stop: GeneratorBottleneck, rate: 200},
		{name: "max rate", q: &queue{k: 1000, serviceMs: 10},
			settings: Settings{Start: 50, Max: 300}, stop: MaxRate, rate: 300},
		{name: "min rate", q: &queue{k: 1000, serviceMs: 60},
			settings: Settings{Start: 50, Min: 10}, stop: MinRate, rate: 0},
		{name: "max steps", q: &queue{k: 1000, serviceMs: 10},
			settings: Settings{Start: 50, MaxSteps: 7}, stop: MaxSteps, rate: 800},
		{name: "step error", q: &queue{k: 1000, serviceMs: 10}, settings: Settings{Start: 50},
			step: func(q *queue) StepFunc {
				return func(ctx context.Context, rate float64) (Measurement, error) {
					if rate > 300 {
						return Measurement{}, fail
					}
					return q.step(ctx, rate)
				}
			}, rate: 200, err: fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := tc.q.step
			if tc.step != nil {
				step = tc.step(tc.q)
			}
			out, err := Search(context.Background(), tc.settings, p99SLO(50), step, nil)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if out.Stop != tc.stop || out.Rate != tc.rate {
				t.Fatalf("stop %q at %v (%s), want %q at %v", out.Stop, out.Rate, out.StopDetail, tc.stop, tc.rate)
			}
			if tc.stop != "" && out.StopDetail == "" {
				t.Fatal("a stop without its detail")
			}
			if n := tc.settings.MaxSteps; n > 0 && len(out.Steps) != n {
				t.Fatalf("%d steps, want the budget of %d", len(out.Steps), n)
			}
		})
	}
}

func TestMidpoint(t *testing.T) {
	for _, tc := range []struct{ lo, hi, precision, want float64 }{
		{400, 800, 0.05, 600},
		{75, 82.5, 0.05, 78.75},
		{14.0625, 15, 0.05, 14.53},   // 14.53125 to four digits
		{1000, 1001, 0.0001, 1000.5}, // six digits keep the half
		{1, 1.0000001, 0.05, 0},      // rounding would leave the interval: unrounded
	} {
		if tc.want == 0 {
			tc.want = (tc.lo + tc.hi) / 2
		}
		if got := midpoint(tc.lo, tc.hi, tc.precision); got != tc.want {
			t.Errorf("midpoint(%v, %v, %v) = %v, want %v", tc.lo, tc.hi, tc.precision, got, tc.want)
		}
	}
}

func TestSearchRefusesBadSettings(t *testing.T) {
	q := &queue{k: 1000, serviceMs: 10}
	for _, tc := range []struct {
		settings Settings
		slo      *load.Thresholds
		want     string
	}{
		{Settings{Start: 0}, p99SLO(50), "start"},
		{Settings{Start: math.NaN()}, p99SLO(50), "start"},
		{Settings{Start: 100, Max: 50}, p99SLO(50), "max"},
		{Settings{Start: 100, Max: 2 * load.MaxRate}, p99SLO(50), "max"},
		{Settings{Start: 100, Growth: 1}, p99SLO(50), "growth"},
		{Settings{Start: 100, Precision: 1.5}, p99SLO(50), "precision"},
		{Settings{Start: 100, Min: 200}, p99SLO(50), "min"},
		{Settings{Start: 100}, nil, "no SLO"},
		{Settings{Start: 100}, &load.Thresholds{AbortOnFail: true}, "no SLO"},
	} {
		_, err := Search(context.Background(), tc.settings, tc.slo, q.step, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Search(%+v): error %v, want one about %s", tc.settings, err, tc.want)
		}
	}
	if len(q.steps) > 0 {
		t.Fatalf("bad settings ran %d steps", len(q.steps))
	}
}

func TestJudge(t *testing.T) {
	total := func(count, errs int64, p99 float64) load.Summary {
		return load.Summary{DurationS: 2, Operations: []load.Operation{{Name: "total", Count: count, Errors: errs, Latency: load.Stats{P99Ms: p99}}}}
	}
	slo := &load.Thresholds{Limits: load.Limits{P99Ms: ptr(50), ErrorRate: ptr(0.01)}}
	for _, tc := range []struct {
		name string
		m    Measurement
		pass bool
		want string
	}{
		{"within", Measurement{Summary: total(200, 2, 49)}, true, ""},
		{"slow", Measurement{Summary: total(200, 0, 51)}, false, "p99_ms 51 > 50"},
		{"errors", Measurement{Summary: total(200, 3, 10)}, false, "error_rate 0.015 > 0.01"},
		{"dropped", Measurement{Summary: func() load.Summary { s := total(200, 0, 10); s.Dropped = 5; return s }()}, false, "5 arrivals dropped"},
		{"no answers", Measurement{Summary: total(0, 0, 0)}, false, "no request was answered"},
		{"cut short", Measurement{Summary: total(100, 0, 10), CutShort: "after 1 s at least 50 answers were slower"}, false, "after 1 s"},
		{"cut short, its cancels left out", Measurement{CutShort: "after 1 s at least 50 answers were slower",
			Summary: load.Summary{DurationS: 1, Operations: []load.Operation{{Name: "total", Count: 150, Errors: 52,
				ErrorsByClass: map[string]int64{"canceled": 50, "timeout": 2}, Latency: load.Stats{P99Ms: 40}}}}}, false, "error_rate 0.02 > 0.01"},
	} {
		st := judge(tc.m, slo, 100)
		if tc.name == "cut short, its cancels left out" && (st.Requests != 100 || st.Errors != 2 || st.ErrorRate != 0.02) {
			t.Errorf("%s: %d requests, %d errors, rate %v; want 100, 2, 0.02 without the 50 canceled", tc.name, st.Requests, st.Errors, st.ErrorRate)
		}
		if st.Pass != tc.pass || !strings.Contains(strings.Join(st.Breaches, "; "), tc.want) {
			t.Errorf("%s: pass=%v breaches %q, want pass=%v and %q", tc.name, st.Pass, st.Breaches, tc.pass, tc.want)
		}
	}
}

// TestJudgeFlaggedGenerator: a step the generator audit flags keeps the
// verdicts the generator cannot have caused.
func TestJudgeFlaggedGenerator(t *testing.T) {
	slo := &load.Thresholds{Limits: load.Limits{P99Ms: ptr(50), ErrorRate: ptr(0.01)}}
	step := func(sent float64, errs int64, p99, lagMax float64, cut string) Measurement {
		return Measurement{CutShort: cut,
			Summary:   load.Summary{DurationS: 2, Operations: []load.Operation{{Name: "total", Count: 200, Errors: errs, RPS: sent, Latency: load.Stats{P99Ms: p99}}}},
			Generator: load.Generator{Bottleneck: true, Reason: "12% of sends were late", LagMaxMs: lagMax}}
	}
	for _, tc := range []struct {
		name         string
		m            Measurement
		pass         bool
		inconclusive string
	}{
		{"a pass at the rate asked stands", step(100, 0, 40, 13, ""), true, ""},
		{"a pass at half the rate says nothing", step(50, 0, 40, 13, ""), true, "sent 50.0/s of the 100/s"},
		// 51 - 50 = 1 ms over, but one answer may owe 13 ms to the generator.
		{"a breach within the lag", step(100, 0, 51, 13, ""), false, "within the generator's largest send lag (13.0 ms)"},
		{"a breach beyond the lag stands", step(100, 0, 500, 13, ""), false, ""},
		{"errors are the deployment's", step(100, 10, 40, 13, ""), false, ""},
		{"a cut step beyond the lag stands", step(30, 0, 500, 13, "after 1 s at least 50 answers were slower"), false, ""},
	} {
		st := judge(tc.m, slo, 100)
		if st.Pass != tc.pass || !strings.Contains(st.Inconclusive, tc.inconclusive) || (tc.inconclusive == "") != (st.Inconclusive == "") {
			t.Errorf("%s: pass=%v inconclusive %q, want pass=%v and %q", tc.name, st.Pass, st.Inconclusive, tc.pass, tc.inconclusive)
		}
		if st.Generator != "12% of sends were late" {
			t.Errorf("%s: generator %q, want the audit's reason", tc.name, st.Generator)
		}
	}
}

func TestCutter(t *testing.T) {
	sec := func(i int, n int64, p50, p99 time.Duration) load.Progress {
		return load.Progress{Elapsed: time.Duration(i) * time.Second, Requests: n, P50: p50, P99: p99}
	}
	ms := time.Millisecond
	// A step of 100/s for 2 s plans 200 answers: a p99 limit allows 2 slow
	// ones, a p50 limit 100, an error_rate of 0.01 two errors.
	for _, tc := range []struct {
		name   string
		limits load.Limits
		secs   []load.Progress
		cutAt  int // 1-based second at which the cut comes; 0: never
		reason string
	}{
		{"p99: a second whose median is over", load.Limits{P99Ms: ptr(50)},
			[]load.Progress{sec(1, 100, 60*ms, 90*ms)}, 1, "at least 50 answers were slower than p99_ms 50"},
		{"p99: seconds whose p99 is over add one each", load.Limits{P99Ms: ptr(50)},
			[]load.Progress{sec(1, 100, 5*ms, 60*ms), sec(2, 100, 5*ms, 60*ms), sec(3, 100, 5*ms, 60*ms)}, 3, "at least 3 answers"},
		{"p99: within", load.Limits{P99Ms: ptr(50)},
			[]load.Progress{sec(1, 100, 5*ms, 40*ms), sec(2, 100, 5*ms, 49*ms)}, 0, ""},
		{"p50: one slow median is not enough", load.Limits{P50Ms: ptr(20)},
			[]load.Progress{sec(1, 100, 30*ms, 40*ms), sec(2, 100, 10*ms, 40*ms)}, 0, ""},
		{"p50: more than half the step", load.Limits{P50Ms: ptr(20)},
			[]load.Progress{sec(1, 100, 30*ms, 40*ms), sec(2, 100, 30*ms, 40*ms), sec(3, 100, 30*ms, 40*ms)}, 3, "p50_ms 20"},
		{"errors", load.Limits{ErrorRate: ptr(0.01)},
			[]load.Progress{{Elapsed: time.Second, Requests: 100, TotalErrors: 2}, {Elapsed: 2 * time.Second, Requests: 100, TotalErrors: 3}}, 2, "3 errors"},
		{"max", load.Limits{MaxMs: ptr(100)},
			[]load.Progress{sec(1, 100, 5*ms, 99*ms), sec(2, 100, 5*ms, 101*ms)}, 2, "max_ms 100"},
		{"mean", load.Limits{MeanMs: ptr(20)},
			// 50 answers at >= 100 ms put the sum at >= 5000 ms: 25 ms over 200.
			[]load.Progress{sec(1, 100, 100*ms, 200*ms)}, 1, "mean_ms 20"},
		{"dropped", load.Limits{P99Ms: ptr(50)},
			[]load.Progress{{Elapsed: time.Second, Requests: 100, Dropped: 4}}, 1, "4 arrivals dropped"},
		{"warm-up is ignored", load.Limits{P99Ms: ptr(50)},
			[]load.Progress{{Warmup: true, Requests: 100, P50: time.Second, P99: time.Second}}, 0, ""},
	} {
		c := NewCutter(&load.Thresholds{Limits: tc.limits}, 200)
		cutAt, reason := 0, ""
		for i, p := range tc.secs {
			if r := c.Observe(p); r != "" {
				cutAt, reason = i+1, r
				break
			}
		}
		if cutAt != tc.cutAt || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: cut at second %d (%q), want %d (%q)", tc.name, cutAt, reason, tc.cutAt, tc.reason)
		}
	}
}
