package load

import (
	"fmt"
	"math"
	"os"
	rmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/warn"
)

// auditor measures the generator itself over the measurement window: its
// CPU, and its GC pauses second by second, read from runtime/metrics,
// which, unlike runtime.ReadMemStats, does not stop the world to read
// them (a stop every second would itself make sends late).
type auditor struct {
	mu      sync.Mutex
	started bool
	t0      time.Time
	cpu0    time.Duration
	wait0   time.Duration // runQueueWait at start
	samples []rmetrics.Sample
	// pause histogram counts at the last sample
	lastCounts []uint64
	pauseWall  float64 // seconds paused since start, from bucket midpoints
	maxPause   float64 // seconds, the upper bound of the longest pause's bucket
	// gcBySec counts the pauses that ended in each second of the window.
	gcBySec []int64
}

// metricPauses is the latency of each GC stop-the-world pause, from the
// decision to stop to the restart: the time every goroutine, the pacer
// included, could not run. Total and max both come from it, so they
// describe the same thing (the runtime's CPU-seconds of pause leave out
// the time spent stopping, which is most of a pause on a busy host).
const metricPauses = "/sched/pauses/total/gc:seconds"

func cpuTime() time.Duration { return hostclock.ProcessCPU() }

// runQueueWait is how long the kernel has kept the process's threads
// runnable but waiting for a CPU (the second field of each thread's
// /proc schedstat): the share of a core that other work on it took. It is
// 0 where /proc does not tell; threads that exited take their share along,
// which the Go runtime rarely lets happen.
func runQueueWait() time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			total += v
		}
	}
	return time.Duration(total)
}

func (a *auditor) start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.samples = []rmetrics.Sample{{Name: metricPauses}}
	rmetrics.Read(a.samples)
	a.lastCounts = a.read()
	a.started, a.t0, a.cpu0, a.wait0 = true, time.Now(), cpuTime(), runQueueWait()
	a.pauseWall, a.maxPause, a.gcBySec = 0, 0, nil
}

// read returns the pause histogram's counts of the last rmetrics.Read.
func (a *auditor) read() []uint64 {
	if v := a.samples[0].Value; v.Kind() == rmetrics.KindFloat64Histogram {
		return append([]uint64(nil), v.Float64Histogram().Counts...)
	}
	return nil
}

// sampleGC adds the pauses since the last sample to second sec of the
// window (sec < 0: not a second of the window) and returns the pause time
// so far.
func (a *auditor) sampleGC(sec int) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started {
		return 0
	}
	rmetrics.Read(a.samples)
	counts := a.read()
	var n int64
	if v := a.samples[0].Value; v.Kind() == rmetrics.KindFloat64Histogram {
		buckets := v.Float64Histogram().Buckets
		for i, c := range counts {
			if i < len(a.lastCounts) && c > a.lastCounts[i] {
				d := c - a.lastCounts[i]
				n += int64(d)
				// Buckets[i] and Buckets[i+1] bound bucket i; the first
				// may be -Inf and the last +Inf, where the other bound
				// is the best we know.
				lo, up := buckets[i], buckets[i+1]
				if math.IsInf(up, 1) {
					up = lo
				}
				if math.IsInf(lo, -1) {
					lo = 0
				}
				a.pauseWall += float64(d) * (lo + up) / 2
				a.maxPause = max(a.maxPause, up)
			}
		}
	}
	a.lastCounts = counts
	if sec >= 0 {
		for len(a.gcBySec) <= sec {
			a.gcBySec = append(a.gcBySec, 0)
		}
		a.gcBySec[sec] += n
	}
	return time.Duration(a.pauseWall * 1e9)
}

// minSends is how many sends the audit needs before it judges: fewer
// cannot tell a p99 from a single slow send (the first one pays for the
// connection).
const minSends = 100

// lagShare is the share of a reported latency percentile the generator's
// own lag at the same percentile must reach for the run to be warned.
const lagShare = 0.10

// legacyFactor and legacySlack made the fixed-margin limits the lag was
// judged by before the intervals (interval.go): floor.limit_p99_ms and
// limit_p999_ms keep them for comparison with older stores; the verdict
// no longer reads them.
const (
	legacyFactor = 1.2
	legacySlack  = 0.05 // ms
)

// verdicts of Generator.Verdict
const (
	VerdictOK         = "ok"
	VerdictBottleneck = "bottleneck"
	VerdictTooFew     = "too_few_sends"
)

// auditInput is what the audit judges.
type auditInput struct {
	closed      bool
	sends       int64
	lag         *hdr.Histogram // µs
	wall        time.Duration
	cpuPercent  float64
	cores       int
	runWait     time.Duration // kept waiting for a CPU
	gcPause     time.Duration
	dropped     int64
	maxInflight int
	floor       *hostclock.Calibration // the experiment's calibration
	// window is the sentinel's lateness over the run's window, nil when
	// none reported (windowErr says why, when one was asked).
	window    *hostclock.Calibration
	windowErr error
	total     Operation // the "total" operation of the summary
}

// judge fills the verdict, its reason and the warnings of a run.
func judge(g *Generator, in auditInput) (warnings []warn.Warning) {
	if in.sends < minSends {
		g.Verdict = VerdictTooFew
		g.Reason = fmt.Sprintf("too few sends to judge the generator: %d in the window, the audit needs %d", in.sends, minSends)
		warnings = []warn.Warning{warn.Newf(warn.GeneratorAudit, "%s", g.Reason)}
		if in.dropped > 0 {
			warnings = append(warnings, warn.Newf(warn.Dropped, "%d arrivals were not sent because %d requests were already in flight (load.max_inflight)", in.dropped, in.maxInflight))
		}
		return warnings
	}
	var reasons []string
	lagOK := true
	if !in.closed {
		lr := lagReasons(g, in)
		reasons, lagOK = append(reasons, lr...), len(lr) == 0
	}
	if in.cpuPercent > 90*float64(in.cores) {
		reasons = append(reasons, fmt.Sprintf("the generator used %.0f%% CPU of the %s it may use", in.cpuPercent, english.Count(in.cores, "core")))
	}
	if in.wall > 0 && in.gcPause > in.wall/20 {
		reasons = append(reasons, fmt.Sprintf("GC paused the generator for %.0f ms (%.1f%% of the run)", g.GCPauseTotalMs, 100*float64(in.gcPause)/float64(in.wall)))
	}
	if in.dropped > 0 {
		reasons = append(reasons, fmt.Sprintf("%d arrivals were dropped because %d requests were already in flight (load.max_inflight)", in.dropped, in.maxInflight))
	}
	g.Verdict = VerdictOK
	if len(reasons) > 0 {
		g.Verdict, g.Bottleneck = VerdictBottleneck, true
		g.Reason = strings.Join(reasons, "; ")
		warnings = append(warnings, warn.Newf(warn.GeneratorBottleneck, "%s", g.Reason))
	}
	if w, ok := hostLateWarning(g, in); ok && lagOK {
		warnings = append(warnings, w)
	}
	if !in.closed {
		if w := lagAccounts(in.lag, in.total.Latency); w != "" {
			warnings = append(warnings, warn.Newf(warn.GeneratorLag, "%s", w))
		}
	}
	return warnings
}

// Floor is what an open loop's send lag was judged against: run.json's
// generator.floor.
type Floor struct {
	// Source is FloorWindow (the sentinel beside the run, over its
	// window), FloorExperiment (the calibration before the experiment,
	// host_timer) or FloorFixed (no floor: over 1% of sends late by more
	// than 1 ms).
	Source string `json:"source"`
	// P99Ms and P999Ms are the bare loop's lateness the limits come from.
	P99Ms  float64 `json:"p99_ms,omitempty"`
	P999Ms float64 `json:"p999_ms,omitempty"`
	// LimitP99Ms and LimitP999Ms are the former fixed-margin limits, 1.2
	// × those + 0.05 ms, kept for comparison with older stores: the
	// verdict is Intervals'.
	LimitP99Ms  float64 `json:"limit_p99_ms,omitempty"`
	LimitP999Ms float64 `json:"limit_p999_ms,omitempty"`
	// Intervals are the confidence intervals of the lag's and the floor's
	// p99 and p99.9 the verdict compared (interval.go).
	Intervals []LagInterval `json:"intervals,omitempty"`
	// Note says why the floor is not the window's.
	Note string `json:"note,omitempty"`
}

// sources of Floor
const (
	FloorWindow     = "window"
	FloorExperiment = "experiment"
	FloorFixed      = "fixed"
)

// floorOf picks what the lag is judged against: the window's sentinel
// when it reported, else the experiment's calibration, else the fixed
// rule; a fallback says why. A floor known only by its percentiles (no
// histogram to bound them) is no floor for an interval: the fixed rule.
func floorOf(in auditInput) Floor {
	c, f := in.window, Floor{Source: FloorWindow}
	if c == nil {
		c, f.Source = in.floor, FloorExperiment
		if in.windowErr != nil {
			f.Note = fmt.Sprintf("no timer loop ran beside the run (%v)", in.windowErr)
		} else {
			f.Note = "no timer loop ran beside the run"
		}
	}
	if c == nil {
		f.Source = FloorFixed
		f.Note += "; the host timer was not calibrated either"
		return f
	}
	f.P99Ms, f.P999Ms = c.P99Ms, c.P999Ms
	f.LimitP99Ms, f.LimitP999Ms = legacyFactor*c.P99Ms+legacySlack, legacyFactor*c.P999Ms+legacySlack
	if c.Histogram() == nil {
		f.Source = FloorFixed
		f.Note = strings.TrimPrefix(f.Note+"; the floor's lateness histogram is not known, so its percentiles cannot be bounded", "; ")
	}
	return f
}

// hostLate says the sentinel itself was late in the window: over 1% of
// its wake-ups later than a send must be to count as late (1 ms).
func hostLate(in auditInput) bool {
	return in.window != nil && in.window.P99Ms > float64(lateNs)/1e6
}

// lagReasons judges the open loop's send lag against the floor (floorOf)
// and names the cause. The sentinel is the evidence: when it, too, woke
// late in the window, the host was late; when it woke on time, the
// generator's own work delayed its sends. Without it the cause is not
// known, and the reason says so rather than guess.
func lagReasons(g *Generator, in auditInput) []string {
	f := floorOf(in)
	if f.Source == FloorFixed {
		g.Floor = &f
		if frac := float64(g.LateSends) / float64(in.sends); frac > 0.01 {
			return []string{fmt.Sprintf("%.1f%% of sends were late by more than 1 ms (lag p99 %.2f ms; %s)", 100*frac, g.LagP99Ms, strings.TrimPrefix(f.Note, "; "))}
		}
		return nil
	}
	whose := "this window's host floor (the bare timer loop beside it"
	fh := in.window.Histogram()
	if f.Source == FloorExperiment {
		whose, fh = "the host's floor (the bare timer loop before the experiment", in.floor.Histogram()
	}
	var out []string
	for _, p := range []float64{99, 99.9} {
		li := judgeLagPercentile(in.lag, fh, p)
		f.Intervals = append(f.Intervals, li)
		if li.Beyond {
			out = append(out, fmt.Sprintf("send lag %s %.3f–%.3f ms lies above %s: %s %.3f–%.3f ms; %s intervals, %.2f ms slack)",
				pName(p), li.Lag.LoMs, li.Lag.HiMs, whose, pName(p), li.Floor.LoMs, li.Floor.HiMs, pct(li.Confidence), li.SlackMs))
		}
	}
	g.Floor = &f
	if len(out) == 0 {
		return nil
	}
	own := ownWork(in)
	switch {
	case f.Source == FloorExperiment:
		out[len(out)-1] += fmt.Sprintf("; %s, so whether the host or the generator's own work (%s) made it late is not known", f.Note, own)
	case hostLate(in):
		out[len(out)-1] += fmt.Sprintf("; the host was late in this window too (the timer loop beside it p99 %.3f ms), but the generator was later still: its own work (%s) added to it", in.window.P99Ms, own)
	default:
		out[len(out)-1] += fmt.Sprintf("; the timer loop on its CPUs woke on time, so the generator's own work delayed its sends (%s)", own)
	}
	return out
}

// ownWork lists what the generator did over the window that can delay a
// send: its CPU, how long its threads waited for a CPU, its GC pauses.
func ownWork(in auditInput) string {
	parts := []string{fmt.Sprintf("CPU %.0f%% of %s", in.cpuPercent, english.Count(max(in.cores, 1), "core"))}
	if in.wall > 0 {
		parts = append(parts, fmt.Sprintf("its threads waited %.0f ms for a CPU over %.1f s", float64(in.runWait)/1e6, in.wall.Seconds()))
	}
	parts = append(parts, fmt.Sprintf("GC paused it %.0f ms", float64(in.gcPause)/1e6))
	return strings.Join(parts, ", ")
}

// hostLateWarning is the note of a run whose lag the window's floor
// excuses (judge gives it only then): the sentinel was late too, so the latencies hold the host's
// lateness, which no generator on those CPUs could have avoided.
func hostLateWarning(g *Generator, in auditInput) (warn.Warning, bool) {
	if in.closed || !hostLate(in) || g.LagP99Ms <= float64(lateNs)/1e6 {
		return warn.Warning{}, false
	}
	return warn.Newf(warn.HostLate, "the host woke a bare timer loop on the generator's CPUs late in this window (p99 %.3f ms, p99.9 %.3f ms): the send lag (p99 %.3f ms) is the host's, not the generator's, and is in the latencies", in.window.P99Ms, in.window.P999Ms, g.LagP99Ms), true
}

// saturationShare is the share of the offered rate an open loop must
// complete, and timeoutShare the share of its sends that may time out,
// for the system under test to count as keeping up.
const (
	saturationShare = 0.9
	timeoutShare    = 0.01
)

// saturation warns when an open loop completed far fewer requests than it
// offered, or many timed out: the system under test did not keep up, and
// its latencies describe a growing queue, not the service. offered is the
// arrivals of the window (sent or dropped) per second. Completed counts
// the answers that came within the window to its own arrivals, so a
// healthy service with mean latency W answers all but about the last W's
// (Little's law): completed is held to that share of offered, and not
// to answers the window's end cut off.
func saturation(closed bool, s Summary, sends int64) (warn.Warning, bool) {
	if closed || sends < minSends || s.DurationS <= 0 || len(s.Operations) == 0 {
		return warn.Warning{}, false
	}
	tot := s.Operations[0]
	offered := float64(sends+s.Dropped) / s.DurationS
	timeouts := tot.ErrorsByClass["timeout"]
	inWindow := max(1-tot.Latency.MeanMs/1e3/s.DurationS, 0)
	if tot.CompletedRPS >= saturationShare*inWindow*offered && float64(timeouts) <= timeoutShare*float64(sends) {
		return warn.Warning{}, false
	}
	return warn.Newf(warn.Saturated, "completed %.1f req/s of %.1f offered (%.0f%%; at its mean latency of %.1f ms a service that kept up would have completed about %.0f%% within the window), %d requests timed out, %d arrivals dropped: the system under test did not keep up with the rate, so the latencies describe its queue",
		tot.CompletedRPS, offered, 100*tot.CompletedRPS/offered, tot.Latency.MeanMs, 100*inWindow, timeouts, s.Dropped), true
}

// lagAccounts names the reported latency percentiles that the
// generator's lag at the same percentile could account for a tenth or
// more of: at least that share of the sends left that late, so the
// generator alone could have put that much into the percentile.
func lagAccounts(lag *hdr.Histogram, lat Stats) string {
	if lag.TotalCount() == 0 {
		return ""
	}
	type pq struct {
		name string
		q    float64
		v    float64
	}
	var hits []string
	for _, p := range []pq{{"p50", 50, lat.P50Ms}, {"p90", 90, lat.P90Ms}, {"p95", 95, lat.P95Ms},
		{"p99", 99, lat.P99Ms}, {"p99.9", 99.9, lat.P999Ms}, {"max", 100, lat.MaxMs}} {
		l := float64(lag.ValueAtQuantile(p.q)) / 1e3
		if p.q == 100 {
			l = float64(lag.Max()) / 1e3
		}
		if p.v > 0 && l >= lagShare*p.v && l > float64(histMinUs)/1e3 {
			hits = append(hits, fmt.Sprintf("%s %.3f ms (lag %.3f ms, %.0f%%)", p.name, p.v, l, 100*l/p.v))
		}
	}
	if len(hits) == 0 {
		return ""
	}
	return "the generator's own send lag could account for 10% or more of latency " + strings.Join(hits, ", ")
}

// gcLineUp says whether the late sends crowd into the seconds with GC
// pauses: a larger share of the late sends than of the seconds. With
// fewer than three seconds every second may hold a pause, and the
// comparison says nothing.
func gcLineUp(lateInGC, late int64, gcSecs, secs int) bool {
	if lateInGC == 0 || late == 0 || secs < 3 || gcSecs == secs {
		return false
	}
	return float64(lateInGC)/float64(late) > float64(gcSecs)/float64(secs)
}
