package load

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/warn"
)

// countingServer answers the first slowN requests after slow and the rest
// at once, and remembers the most requests it had in flight during those
// first slowN.
type countingServer struct {
	*httptest.Server
	n, inflight, maxWarm atomic.Int64
}

func newCountingServer(t *testing.T, slowN int64, slow time.Duration) *countingServer {
	t.Helper()
	cs := &countingServer{}
	var mu sync.Mutex
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := cs.n.Add(1)
		in := cs.inflight.Add(1)
		defer cs.inflight.Add(-1)
		if k <= slowN {
			mu.Lock()
			cs.maxWarm.Store(max(cs.maxWarm.Load(), in))
			mu.Unlock()
			time.Sleep(slow)
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(cs.Close)
	return cs
}

// TestWarmupCalls: a warm-up by calls runs exactly load.warmup_calls
// calls, never more at once than load.warmup_users, and none of them is
// in the measurement: the first 40 requests the server sees take 150 ms
// each, the ones after answer at once, so a warm-up call in the measured
// histogram would show as its maximum.
func TestWarmupCalls(t *testing.T) {
	const calls, users, slow = 40, 4, 150 * time.Millisecond
	srv := newCountingServer(t, calls, slow)
	var warmLines atomic.Int64
	cfg := Config{Target: srv.URL, Rate: 50, Duration: Duration(time.Second),
		Warmup: Duration(30 * time.Second), WarmupCalls: calls, WarmupUsers: users}
	start := time.Now()
	var measuring []time.Time
	var servedAtMeasuring int64
	res := run(t, cfg, Options{Progress: func(p Progress) {
		if p.Warmup {
			warmLines.Add(1)
		}
	}, Measuring: func(at time.Time) {
		measuring = append(measuring, at)
		servedAtMeasuring = srv.n.Load()
	}})
	took := time.Since(start)
	// What is timed from the window (a fault) learns its start when the
	// warm-up's calls are done, not load.warmup after the start.
	if len(measuring) != 1 {
		t.Fatalf("Measuring called %d times, want once", len(measuring))
	}
	if servedAtMeasuring != calls {
		t.Errorf("Measuring was called when the server had answered %d requests, want the %d of the warm-up", servedAtMeasuring, calls)
	}
	if d := measuring[0].Sub(res.MeasureStart(cfg.Warmup.D())); d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Errorf("Measuring reported a window %v away from the result's MeasureStart", d)
	}

	w := res.Warmup
	if w == nil {
		t.Fatal("run.json has no warmup record")
	}
	if w.Calls != calls || w.Errors != 0 || w.TargetCalls != calls || w.Users != users || w.CutByTime {
		t.Errorf("warmup record %+v, want %d calls by %d users, not cut", *w, calls, users)
	}
	// 40 calls of 150 ms by 4 users back to back: 10 rounds, 1.5 s.
	if min := float64(calls/users) * slow.Seconds(); w.DurationS < min || w.DurationS > 30 {
		t.Errorf("warm-up took %.2fs, want at least %.2fs (10 rounds of 150 ms) and well under its 30 s bound", w.DurationS, min)
	}
	if got := srv.maxWarm.Load(); got > users {
		t.Errorf("the warm-up had %d requests in flight at once, want at most %d (a closed loop)", got, users)
	}
	if warmLines.Load() == 0 {
		t.Error("no progress line during a warm-up of over a second")
	}
	tot := mustOp(t, res, "total")
	if got := srv.n.Load() - calls; tot.Count != got {
		t.Errorf("measured %d requests, the server answered %d after the warm-up", tot.Count, got)
	}
	if tot.Count < 40 {
		t.Errorf("measured %d requests of the 50 a 1 s window at 50/s plans", tot.Count)
	}
	if tot.Latency.MaxMs >= float64(slow.Milliseconds()) {
		t.Errorf("measured max latency %.1f ms: a %v warm-up call is in the histogram", tot.Latency.MaxMs, slow)
	}
	// The open loop starts once the calls are done, not after the 30 s
	// bound; and the run's measurement starts where the warm-up ended.
	if took > 15*time.Second {
		t.Errorf("the run took %v: the open loop waited for load.warmup instead of the calls", took)
	}
	if ms := res.MeasureStart(cfg.Warmup.D()); math.Abs(ms.Sub(res.Started).Seconds()-w.DurationS) > 1e-6 {
		t.Errorf("MeasureStart is %v after Started, want the warm-up's %.3fs", ms.Sub(res.Started), w.DurationS)
	}
	if w, ok := warn.Find(res.Warnings, warn.WarmupCut); ok {
		t.Errorf("warning %q for a warm-up that ran whole", w)
	}
}

// TestWarmupCutByTime: a warm-up that cannot complete its calls within
// load.warmup stops there, says so in its record and in a warning, and the
// measurement still runs.
func TestWarmupCutByTime(t *testing.T) {
	const bound, slow = 600 * time.Millisecond, 100 * time.Millisecond
	srv := newCountingServer(t, 1_000_000, slow)
	cfg := Config{Target: srv.URL, Mode: Closed, Users: 1, Duration: Duration(500 * time.Millisecond),
		Warmup: Duration(bound), WarmupCalls: 1000, WarmupUsers: 2}
	res := run(t, cfg, Options{})
	w := res.Warmup
	if w == nil {
		t.Fatal("no warmup record")
	}
	if !w.CutByTime || w.Calls >= 1000 || w.Calls == 0 {
		t.Errorf("warmup record %+v, want cut by time with some of its 1000 calls", *w)
	}
	// Two users, 100 ms a call, 600 ms: about 12 calls, each user finishing
	// the call it is in at the bound.
	if hi := int64(2 * (bound/slow + 1)); w.Calls > hi {
		t.Errorf("%d warm-up calls in %v by 2 users at %v each, want at most %d", w.Calls, bound, slow, hi)
	}
	if w.DurationS < bound.Seconds() || w.DurationS > bound.Seconds()+2*slow.Seconds()+1 {
		t.Errorf("cut warm-up took %.3fs, want its bound %v plus at most the call in flight", w.DurationS, bound)
	}
	if w, ok := warn.Find(res.Warnings, warn.WarmupCut); !ok || !strings.HasPrefix(w.Text, "warmup_cut: ") {
		t.Errorf("warnings %q do not say the warm-up was cut", res.Warnings)
	}
	if tot := mustOp(t, res, "total"); tot.Count == 0 || tot.Count != srv.n.Load()-w.Calls {
		t.Errorf("measured %d requests, the server answered %d after the warm-up", tot.Count, srv.n.Load()-w.Calls)
	}
}

// TestWarmupCanceled: a run canceled during its warm-up by calls returns
// the context's error promptly and leaves no call running.
func TestWarmupCanceled(t *testing.T) {
	srv := newCountingServer(t, 1_000_000, 50*time.Millisecond)
	cfg := Config{Target: srv.URL, Rate: 10, Warmup: Duration(time.Minute), WarmupCalls: 100_000}
	tg, err := NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, cfg, tg, Options{})
	if err == nil || res != nil {
		t.Fatalf("Run = %v, %v; want no result and the context's error", res, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("canceled warm-up returned after %v", took)
	}
	n := srv.n.Load()
	time.Sleep(200 * time.Millisecond)
	if later := srv.n.Load(); later != n {
		t.Errorf("%d requests sent after Run returned", later-n)
	}
}

// TestMeasuringAfterTimedWarmup: with a warm-up by time, Measuring reports
// load.warmup after the start, before the window's first request.
func TestMeasuringAfterTimedWarmup(t *testing.T) {
	srv := newCountingServer(t, 0, 0)
	const warm = 300 * time.Millisecond
	cfg := Config{Target: srv.URL, Rate: 50, Warmup: Duration(warm), Duration: Duration(300 * time.Millisecond)}
	var measuring []time.Time
	before := time.Now()
	res := run(t, cfg, Options{Measuring: func(at time.Time) { measuring = append(measuring, at) }})
	if len(measuring) != 1 {
		t.Fatalf("Measuring called %d times, want once", len(measuring))
	}
	if got := measuring[0].Sub(res.Started); got < warm-time.Millisecond || got > warm+time.Millisecond {
		t.Errorf("Measuring reported the window %v after the start, want load.warmup = %v", got, warm)
	}
	if measuring[0].Before(before.Add(warm)) {
		t.Errorf("window reported at %v, before the run could have warmed up", measuring[0].Sub(before))
	}
}

// TestWarmupSecondsHaveTheirHistogram: a warm-up second carries its own
// latency histogram, so a live view shows its p90 and max, not only the
// p50 and p99 (they were 0 on the page's event stream).
func TestWarmupSecondsHaveTheirHistogram(t *testing.T) {
	srv := newCountingServer(t, 0, 0)
	cfg := Config{Target: srv.URL, Rate: 50, Warmup: Duration(2500 * time.Millisecond), Duration: Duration(300 * time.Millisecond)}
	var warm []Progress
	run(t, cfg, Options{Progress: func(p Progress) {
		if p.Warmup {
			warm = append(warm, p)
		}
	}})
	if len(warm) < 2 {
		t.Fatalf("%d warm-up seconds reported, want at least 2", len(warm))
	}
	for i, p := range warm {
		if p.Latency == nil || p.Latency.TotalCount() != p.Requests || p.Requests == 0 {
			t.Fatalf("warm-up second %d: %d requests, histogram %v", i, p.Requests, p.Latency)
		}
		if p.Latency.Max() < p.Latency.ValueAtQuantile(90) || p.Latency.ValueAtQuantile(90) < p.Latency.ValueAtQuantile(50) {
			t.Errorf("warm-up second %d: p50 %d, p90 %d, max %d µs", i, p.Latency.ValueAtQuantile(50), p.Latency.ValueAtQuantile(90), p.Latency.Max())
		}
		if got := time.Duration(p.Latency.ValueAtQuantile(99)) * time.Microsecond; got != p.P99 {
			t.Errorf("warm-up second %d: P99 %v, its histogram's %v", i, p.P99, got)
		}
	}
	// Each second's histogram is its own: the first's count is not the sum.
	if warm[1].Latency == warm[0].Latency {
		t.Error("two warm-up seconds share one histogram")
	}
}
