package load

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/warn"
)

// lagOf builds a lag histogram (µs) of n sends: all at base µs but the
// last k, at slow µs.
func lagOf(n, k int, base, slow int64) *hdr.Histogram {
	h := newHist()
	for i := 0; i < n; i++ {
		v := base
		if i >= n-k {
			v = slow
		}
		h.RecordValue(v)
	}
	return h
}

// floorOf builds a bare loop's calibration from a lateness histogram
// (ns) of n wake-ups: all at base µs but the last k, at slow µs.
func floorCal(n, k int, base, slow int64) *hostclock.Calibration {
	h := hdr.New(1, int64(10*time.Second), 3)
	for i := 0; i < n; i++ {
		v := base
		if i >= n-k {
			v = slow
		}
		h.RecordValue(v * 1000)
	}
	c := hostclock.FromHistogram(h)
	return &c
}

// heavyTail is n values: all at base µs but the top 40, at step, 2·step,
// … 40·step µs, in a histogram of µs (lag) or ns (floor).
func heavyTail(n int, base, step int64, ns bool) *hdr.Histogram {
	h, unit := newHist(), int64(1)
	if ns {
		h, unit = hdr.New(1, int64(10*time.Second), 3), 1000
	}
	for i := 0; i < n; i++ {
		v := base
		if k := int64(i - (n - 40) + 1); k > 0 {
			v = k * step
		}
		h.RecordValue(v * unit)
	}
	return h
}

// TestJudge: each rule of the audit, on figures whose percentiles are
// known by construction. With 2,000 sends (or wake-ups) the p99's 95%
// interval is the 1,971st to the 1,989th value (scipy: interval_test.go),
// so 30 slow ones fill it and 10 stay above it; p99.9 needs 3,688.
func TestJudge(t *testing.T) {
	floor := floorCal(2000, 30, 50, 200) // p99 interval [0.2, 0.2] ms
	tail := heavyTail(2000, 100, 100, true)
	noisy := hostclock.FromHistogram(tail)
	quiet := Stats{P50Ms: 1, P90Ms: 1.5, P95Ms: 2, P99Ms: 3, P999Ms: 5, MaxMs: 8}
	for _, tc := range []struct {
		name    string
		in      auditInput
		late    int64
		verdict string
		reason  string // in Reason, when set
		warn    string // in the warnings, when set
		nowarn  string // not in the warnings
		note    string // in the p99.9 interval's note, when set
	}{
		{name: "at the floor", in: auditInput{sends: 2000, lag: lagOf(2000, 10, 10, 150), floor: floor, total: Operation{Latency: quiet}},
			verdict: VerdictOK, nowarn: "generator_"},
		// 30 slow sends of 2,000 put the whole p99 interval at 2 ms, above
		// the floor's [0.2, 0.2] ms + 0.05.
		{name: "p99 beyond the floor", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 2000), floor: floor, total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "send lag p99 2.000–2.000 ms lies above the host's floor (the bare timer loop before the experiment: p99 0.200–0.200 ms; 95% intervals, 0.05 ms slack)"},
		// 3 slow sends of 2,000 made the old rule flag on p99.9 (the
		// 1,998th); 2,000 sends cannot bound a p99.9, so it is not judged.
		{name: "p99.9 of 2000 sends not judged", in: auditInput{sends: 2000, lag: lagOf(2000, 3, 10, 2000), floor: floor, total: Operation{Latency: quiet}},
			verdict: VerdictOK, nowarn: "generator_bottleneck", note: "p99.9 not judged: 2000 sends and 2000 wake-ups of the timer loop too few at 95% (an interval needs 3688)"},
		// 5,000 sends and wake-ups bound a p99.9 (ranks 4,990..5,000):
		// 11 slow sends fill it; the floor's 3 slow wake-ups span it.
		{name: "p99.9 beyond the floor", in: auditInput{sends: 5000, lag: lagOf(5000, 11, 10, 2000), floor: floorCal(5000, 3, 50, 500), total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "send lag p99.9 2.000–2.000 ms lies above the host's floor (the bare timer loop before the experiment: p99.9 0.050–0.500 ms"},
		// A heavy tail in both, the lag's 1.3× the floor's: the point p99s
		// (2.6 and 2.0 ms) broke the old 1.2 × p99 + 0.05 ms, but the
		// intervals ([1.43, 3.77] and [1.1, 2.9] ms) overlap: noise.
		{name: "noise in the tail", in: auditInput{sends: 2000, lag: heavyTail(2000, 10, 130, false), window: &noisy, floor: floor, total: Operation{Latency: quiet}},
			verdict: VerdictOK, nowarn: "generator_bottleneck"},
		// Without a floor, the fixed rule: over 1% late by more than 1 ms.
		{name: "no floor, 1.5% late", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 2000), total: Operation{Latency: quiet}}, late: 30,
			verdict: VerdictBottleneck, reason: "1.5% of sends were late by more than 1 ms"},
		{name: "no floor, 0.5% late", in: auditInput{sends: 2000, lag: lagOf(2000, 10, 10, 2000), total: Operation{Latency: quiet}}, late: 10,
			verdict: VerdictOK, warn: "generator_lag: "},
		// A floor known only by its percentiles cannot be bounded: the
		// fixed rule, and the note says why.
		{name: "floor without a histogram", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 2000), floor: &hostclock.Calibration{P99Ms: 0.2, P999Ms: 0.5}, total: Operation{Latency: quiet}}, late: 30,
			verdict: VerdictBottleneck, reason: "the floor's lateness histogram is not known"},
		{name: "CPU saturated", in: auditInput{sends: 2000, lag: lagOf(2000, 0, 10, 0), floor: floor, cpuPercent: 195, cores: 2, total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "195% CPU of the 2 cores"},
		{name: "dropped", in: auditInput{sends: 2000, lag: lagOf(2000, 0, 10, 0), floor: floor, dropped: 7, maxInflight: 100, total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "7 arrivals were dropped"},
		{name: "GC over 5% of the run", in: auditInput{sends: 2000, lag: lagOf(2000, 0, 10, 0), floor: floor, wall: time.Second, gcPause: 60 * time.Millisecond, total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "GC paused the generator"},
		{name: "two sends", in: auditInput{sends: 2, lag: lagOf(2, 1, 10, 20000), floor: floor, total: Operation{Latency: quiet}},
			verdict: VerdictTooFew, reason: "too few sends", warn: "generator_audit: too few sends", nowarn: "generator_bottleneck"},
		// Judged against the calibration before the experiment, a run's
		// lag beyond it cannot be pinned on the host or the generator:
		// the reason says so, with the generator's own figures.
		{name: "experiment floor only", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 2000), floor: floor, wall: time.Second, runWait: 300 * time.Millisecond, cpuPercent: 12, cores: 1, total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "no timer loop ran beside the run, so whether the host or the generator's own work (CPU 12% of 1 core, its threads waited 300 ms for a CPU over 1.0 s, GC paused it 0 ms) made it late is not known",
			nowarn: "other work"},
		// The window's sentinel woke late too (p99 3 ms): a lag p99 of 2
		// ms that the experiment's floor would have flagged is the
		// host's, said as such.
		{name: "host late in the window", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 2000), floor: floor, window: floorCal(2000, 30, 100, 3000), wall: time.Second, runWait: 300 * time.Millisecond, total: Operation{Latency: quiet}},
			verdict: VerdictOK, warn: "host_late: the host woke a bare timer loop on the generator's CPUs late in this window (p99 3.00", nowarn: "generator_bottleneck"},
		// The sentinel woke on time (p99 0.1 ms), the generator did not:
		// its own work is named, and no host_late.
		{name: "generator late, host on time", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 2000), floor: floor, window: floorCal(2000, 30, 50, 100), wall: 2 * time.Second, runWait: 500 * time.Millisecond, cpuPercent: 40, cores: 1, gcPause: 3 * time.Millisecond, total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "send lag p99 2.000–2.000 ms lies above this window's host floor (the bare timer loop beside it: p99 0.100–0.100 ms; 95% intervals, 0.05 ms slack); the timer loop on its CPUs woke on time, so the generator's own work delayed its sends (CPU 40% of 1 core, its threads waited 500 ms for a CPU over 2.0 s, GC paused it 3 ms)",
			nowarn: "host_late"},
		// Both late, the generator beyond the host's lateness: flagged,
		// and the reason gives the host its share.
		{name: "both late, generator later", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 9000), floor: floor, window: floorCal(2000, 30, 100, 2000), wall: time.Second, cores: 1, total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "the host was late in this window too (the timer loop beside it p99 2.00", nowarn: "host_late"},
		// A sentinel that failed: the experiment's floor, and the note why.
		{name: "sentinel failed", in: auditInput{sends: 2000, lag: lagOf(2000, 30, 10, 2000), floor: floor, windowErr: errors.New("start /nope: no such file"), total: Operation{Latency: quiet}},
			verdict: VerdictBottleneck, reason: "no timer loop ran beside the run (start /nope: no such file)"},
		// The closed loop's pacing lag is the target's: never a verdict.
		{name: "closed loop lag", in: auditInput{closed: true, sends: 2000, lag: lagOf(2000, 30, 10, 200000), floor: floor, total: Operation{Latency: quiet}},
			verdict: VerdictOK, nowarn: "generator_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Generator{LateSends: tc.late}
			if h := tc.in.lag; h.TotalCount() > 0 {
				g.LagP99Ms = float64(h.ValueAtQuantile(99)) / 1e3
				g.LagP999Ms = float64(h.ValueAtQuantile(99.9)) / 1e3
			}
			ws := judge(&g, tc.in)
			warns := texts(ws)
			if g.Verdict != tc.verdict || g.Bottleneck != (tc.verdict == VerdictBottleneck) {
				t.Errorf("verdict %q (bottleneck %v), want %q; reason %q", g.Verdict, g.Bottleneck, tc.verdict, g.Reason)
			}
			if tc.reason != "" && !strings.Contains(g.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", g.Reason, tc.reason)
			}
			if b, ok := warn.Find(ws, warn.GeneratorBottleneck); ok != (tc.verdict == VerdictBottleneck) || ok && b.Text != "generator_bottleneck: "+g.Reason {
				t.Errorf("warnings %q: a generator_bottleneck one %v, want %v, saying the reason", warns, ok, tc.verdict == VerdictBottleneck)
			}
			if tc.warn != "" && !strings.Contains(warns, tc.warn) {
				t.Errorf("warnings %q lack %q", warns, tc.warn)
			}
			if tc.nowarn != "" && strings.Contains(warns+g.Reason, tc.nowarn) {
				t.Errorf("warnings %q or reason %q have %q", warns, g.Reason, tc.nowarn)
			}
			checkFloor(t, g.Floor, tc.in)
			if tc.note != "" && (g.Floor == nil || len(g.Floor.Intervals) != 2 || !strings.Contains(g.Floor.Intervals[1].Note, tc.note)) {
				t.Errorf("floor %+v: want the p99.9 note %q", g.Floor, tc.note)
			}
		})
	}
}

// checkFloor: an open loop's generator object says what it was judged
// against, with the intervals it compared.
func checkFloor(t *testing.T, f *Floor, in auditInput) {
	t.Helper()
	if in.closed || in.sends < minSends {
		if f != nil {
			t.Errorf("floor %+v recorded for a run not judged by its lag", f)
		}
		return
	}
	want := Floor{Source: FloorFixed}
	var c *hostclock.Calibration
	switch {
	case in.window != nil:
		c, want = in.window, Floor{Source: FloorWindow, P99Ms: in.window.P99Ms, P999Ms: in.window.P999Ms}
	case in.floor != nil:
		c, want = in.floor, Floor{Source: FloorExperiment, P99Ms: in.floor.P99Ms, P999Ms: in.floor.P999Ms}
	}
	if c != nil && c.Histogram() == nil {
		want.Source = FloorFixed
	}
	if f == nil || f.Source != want.Source || f.P99Ms != want.P99Ms || f.P999Ms != want.P999Ms {
		t.Fatalf("floor %+v, want source %q from p99 %v p99.9 %v", f, want.Source, want.P99Ms, want.P999Ms)
	}
	if want.Source == FloorFixed {
		if len(f.Intervals) != 0 {
			t.Errorf("fixed rule with intervals %+v", f.Intervals)
		}
	} else {
		if len(f.Intervals) != 2 || f.Intervals[0].Percentile != 99 || f.Intervals[1].Percentile != 99.9 {
			t.Fatalf("intervals %+v, want p99 and p99.9", f.Intervals)
		}
		for _, li := range f.Intervals {
			if li.Judged != (li.Lag != nil && li.Floor != nil) || li.Judged == (li.Note != "") {
				t.Errorf("interval %+v: judged exactly when both bounds exist, a note exactly when not", li)
			}
			if li.Beyond != (li.Judged && li.Lag.LoMs > li.Floor.HiMs+lagSlackMs) {
				t.Errorf("interval %+v: beyond exactly when the lag's lies above the floor's plus the slack", li)
			}
		}
	}
	if (want.Source == FloorWindow) != (f.Note == "") {
		t.Errorf("floor note %q: want one exactly when the window's floor is missing", f.Note)
	}
}

// TestSaturation: an open loop that completed under 90% of what it
// offered, or had over 1% of its sends time out, is warned; one that kept
// up, or a closed loop, is not.
func TestSaturation(t *testing.T) {
	sum := func(completed float64, timeouts, dropped int64) Summary {
		return Summary{DurationS: 10, Dropped: dropped, Operations: []Operation{{Name: "total", CompletedRPS: completed,
			ErrorsByClass: map[string]int64{"timeout": timeouts}}}}
	}
	// slow is sum with a mean latency of meanMs: a service that kept up
	// completes all but the last meanMs of the 10 s window's arrivals.
	slow := func(completed, meanMs float64) Summary {
		s := sum(completed, 0, 0)
		s.Operations[0].Latency.MeanMs = meanMs
		return s
	}
	for _, tc := range []struct {
		name   string
		closed bool
		s      Summary
		sends  int64
		want   string
	}{
		// 2,000 sends over 10 s offer 200/s; 18.7 completed is 9%.
		{"fell over", false, sum(18.7, 0, 0), 2000, "saturated: completed 18.7 req/s of 200.0 offered (9%"},
		{"kept up", false, sum(199, 0, 0), 2000, ""},
		// 180/s of 200 is exactly 90%: kept up; 179 is not.
		{"at 90%", false, sum(180, 0, 0), 2000, ""},
		{"just under 90%", false, sum(179, 0, 0), 2000, "completed 179.0 req/s of 200.0 offered (90%"},
		// 21 timeouts of 2,000 sends is over 1%.
		{"timeouts", false, sum(199, 21, 0), 2000, "21 requests timed out"},
		{"few timeouts", false, sum(199, 20, 0), 2000, ""},
		// Dropped arrivals were offered too: 1,000 sent + 1,000 dropped.
		{"dropped", false, sum(100, 0, 1000), 1000, "of 200.0 offered (50%; at its mean latency of 0.0 ms a service that kept up would have completed about 100% within the window), 0 requests timed out, 1000 arrivals dropped"},
		// Mean latency 2 s of a 10 s window: 80% within it is what a
		// service that kept up completes; 90% of that is 144/s.
		{"slow but keeping up", false, slow(150, 2000), 2000, ""},
		{"slow and behind", false, slow(140, 2000), 2000, "(70%; at its mean latency of 2000.0 ms a service that kept up would have completed about 80% within the window)"},
		// The new user's run: p50 3.6 s, 18.7 of 200 completed.
		{"fell over, slowly", false, slow(18.7, 3600), 2000, "completed 18.7 req/s of 200.0 offered (9%"},
		{"closed loop", true, sum(1, 0, 0), 2000, ""},
		{"too few sends", false, sum(1, 0, 0), 50, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := saturation(tc.closed, tc.s, tc.sends)
			if ok != (tc.want != "") || !strings.Contains(got.Text, tc.want) || ok && got.Kind != warn.Saturated {
				t.Errorf("saturation = %+v, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestLagAccounts: a lag at a percentile of a tenth or more of the
// latency at that percentile is named; smaller ones are not.
func TestLagAccounts(t *testing.T) {
	// 1,000 sends: 985 at 10 µs, 15 at 2 ms. Lag p50 = p90 = p95 = 10 µs,
	// p99 (the 990th) = p99.9 = max = 2 ms.
	lag := lagOf(1000, 15, 10, 2000)
	lat := Stats{P50Ms: 0.5, P90Ms: 0.8, P95Ms: 1, P99Ms: 4, P999Ms: 25, MaxMs: 30}
	w := lagAccounts(lag, lat)
	// p99: 2/4 = 50%; p99.9: 2/25 = 8%; max 2/30 = 7%; p50: 0.01/0.5 = 2%.
	if !strings.Contains(w, "p99 4.000 ms (lag 2.000 ms, 50%)") {
		t.Errorf("%q does not name p99 at 50%%", w)
	}
	for _, no := range []string{"p50 ", "p90 ", "p95 ", "p99.9 ", "max "} {
		if strings.Contains(w, no) {
			t.Errorf("%q names %s, whose lag share is under 10%%", w, no)
		}
	}
	if w := lagAccounts(lagOf(1000, 0, 10, 0), lat); w != "" {
		t.Errorf("a 10 µs lag under 0.5 ms latencies warned: %q", w)
	}
}

// A 2-request run gives no bottleneck verdict, though its first send pays
// for the connection.
func TestTwoRequestsNoVerdict(t *testing.T) {
	srv := fixedServer(t, 0)
	res := run(t, Config{Target: srv.URL, Rate: 100, Requests: 2}, Options{})
	g := res.Generator
	if g.Verdict != VerdictTooFew || g.Bottleneck || !strings.Contains(g.Reason, "too few sends") {
		t.Fatalf("generator %+v: want no verdict, too few sends", g)
	}
	if w, ok := warn.Find(res.Warnings, warn.GeneratorBottleneck); ok {
		t.Errorf("warning %q", w)
	}
}

// A closed loop without think time counts no late send, however much its
// pacing lag varies; with the target's answers varying, lag there is.
func TestClosedLoopNoThinkNoLateSends(t *testing.T) {
	srv := freezeServer(t, 30*time.Millisecond)
	res := run(t, Config{Target: srv.URL, Mode: "closed", Users: 4, Duration: Duration(1500 * time.Millisecond)}, Options{})
	g := res.Generator
	if g.Sends < minSends {
		t.Fatalf("only %d sends", g.Sends)
	}
	if g.LateSends != 0 || res.Summary.LateSends != 0 {
		t.Errorf("late sends %d (summary %d), want 0 without think time", g.LateSends, res.Summary.LateSends)
	}
	if g.LagMaxMs < 15 {
		t.Errorf("pacing lag max %.2f ms: the 30 ms freeze should show", g.LagMaxMs)
	}
}

// GC pauses during the window are counted from runtime/metrics.
func TestGCPausesCounted(t *testing.T) {
	n := 0
	tg := &Target{Ops: []Op{{Name: "gc", Weight: 1, Do: func(context.Context, *Session) error {
		if n++; n%50 == 0 {
			runtime.GC()
		}
		return nil
	}}}}
	res, err := Run(context.Background(), Config{Rate: 500, Duration: Duration(time.Second)}, tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	g := res.Generator
	// 500 sends, a forced GC every 50th: about 10, each two pauses. Total
	// and max come from one histogram: the total holds the longest
	// pause's bucket midpoint, and a bucket is far narrower than its
	// lower bound, so the max cannot pass twice the total.
	if g.GCPauses < 5 || g.GCPauseTotalMs <= 0 || g.GCPauseMaxMs <= 0 || g.GCPauseMaxMs > g.GCPauseTotalMs*2 {
		t.Errorf("generator %+v: want the forced GCs' pauses", g)
	}
}

func TestGCLineUp(t *testing.T) {
	for _, tc := range []struct {
		lateInGC, late int64
		gcSecs, secs   int
		want           bool
	}{
		{8, 10, 2, 10, true},    // 80% of late sends in 20% of the seconds
		{2, 10, 2, 10, false},   // as chance would have it
		{15, 15, 1, 1, false},   // one second says nothing
		{10, 10, 10, 10, false}, // GC every second
		{0, 10, 2, 10, false},
	} {
		if got := gcLineUp(tc.lateInGC, tc.late, tc.gcSecs, tc.secs); got != tc.want {
			t.Errorf("gcLineUp(%d, %d, %d, %d) = %v, want %v", tc.lateInGC, tc.late, tc.gcSecs, tc.secs, got, tc.want)
		}
	}
}

// The printed summary puts each latency percentile beside the same
// percentile of service time, and the host's floor under the lag.
func TestTableSideBySide(t *testing.T) {
	res := &Result{Summary: Summary{DurationS: 2, Operations: []Operation{{Name: "total", Kind: "total", Count: 10,
		Latency:     Stats{P50Ms: 1, P90Ms: 2, P99Ms: 3, P999Ms: 4, MaxMs: 5},
		ServiceTime: Stats{P50Ms: 0.5, P90Ms: 0.75, P99Ms: 1.25, P999Ms: 1.5, MaxMs: 2}}}},
		Generator: Generator{Sends: 10, LagP99Ms: 0.25, Verdict: VerdictTooFew,
			HostTimer: &hostclock.Calibration{P99Ms: 0.125}}}
	var sb strings.Builder
	if err := res.Table(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"latency / service time, ms", "1.000 / 0.500", "2.000 / 0.750", "3.000 / 1.250", "4.000 / 1.500", "5.000 / 2.000",
		"send lag p50/p99/p99.9/max 0.000/0.250/", "verdict too_few_sends", "host timer floor (bare sleep loop) p50/p99/p99.9/max 0.000/0.125/"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// Two threads made to share one CPU for 300 ms wait for it about half of
// that each, and runQueueWait sees it.
func TestRunQueueWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc schedstat is Linux's")
	}
	before := runQueueWait()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var old, one unix.CPUSet
			if err := unix.SchedGetaffinity(0, &old); err != nil {
				t.Error(err)
				return
			}
			one.Set(0)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				t.Error(err)
				return
			}
			defer unix.SchedSetaffinity(0, &old)
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
			}
		}()
	}
	wg.Wait()
	if got := runQueueWait() - before; got < 50*time.Millisecond {
		t.Errorf("run-queue wait grew by %v, want about 300 ms for two threads on one CPU", got)
	}
}

// Users removed while a request is in flight let it finish: removal cuts
// a think time short, never a request.
func TestRemovedUserFinishesItsRequest(t *testing.T) {
	srv := fixedServer(t, 40*time.Millisecond)
	res := run(t, Config{Target: srv.URL, Mode: "closed", ThinkTime: Duration(5 * time.Millisecond),
		Stages: []Stage{{Type: "step", Duration: Duration(400 * time.Millisecond), Users: 4},
			{Type: "step", Duration: Duration(400 * time.Millisecond), Users: 1}}}, Options{})
	tot := mustOp(t, res, "total")
	if tot.Count < 20 || tot.Errors != 0 {
		t.Errorf("total %+v: want every request of the removed users answered", tot)
	}
}

// texts are the warnings' texts, a line each, for a test to search.
func texts(ws []warn.Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.Text + "\n")
	}
	return b.String()
}
