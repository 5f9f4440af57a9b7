package experiment

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/warn"
)

// progressEvery is how often a log that is not a terminal (a file, a CI
// job) gets a line while a run measures: often enough to see a run is
// alive and how it goes, rarely enough that a long experiment's log stays
// readable. A terminal's line is rewritten every second instead.
const progressEvery = 10 * time.Second

// progress reports an experiment as it runs: a header, each run's phases
// (deploying, warm-up, measuring) with live load figures, and one result
// line per run. On a terminal (live) the current run's line is rewritten
// in place; otherwise every phase gets its own line and measuring gets a
// line every progressEvery.
type progress struct {
	w     io.Writer
	live  bool
	plan  *Plan
	start time.Time
	every time.Duration

	mu    sync.Mutex
	run   Run
	phase string
	last  load.Progress
	total *load.Operation // the finished run's measurement
	gen   *load.Generator // the finished run's self-audit
	done_ int
	// runStart is when the current run began; ran and ranFor are how
	// many runs were carried out here (not kept from before) and how long
	// they took in all, deploy and stop included, which the plan's
	// estimate cannot know.
	runStart time.Time
	ran      int
	ranFor   time.Duration
	lastLine time.Time
	width    int
	open     bool // a live line without its newline yet
}

// newProgress starts the report of plan on w and prints its header.
func newProgress(w io.Writer, live bool, p *Plan, start time.Time) *progress {
	pg := &progress{w: w, live: live, plan: p, start: start, every: progressEvery}
	pg.header()
	return pg
}

// header names the experiment, its size and its order, with the seed a
// shuffled order was drawn with, so that a log alone is enough to repeat it.
func (pg *progress) header() {
	p := pg.plan
	e := p.Spec.Experiment
	line := fmt.Sprintf("experiment %s: %s, order %s", e.Name, english.Count(len(p.Runs), "run"), e.Order)
	if p.Shuffled() {
		line += fmt.Sprintf(" (seed %d", p.Seed)
		if e.Seed == nil {
			line += fmt.Sprintf("; --seed %d repeats this order", p.Seed)
		}
		line += ")"
	}
	fmt.Fprintf(pg.w, "%s, estimated %s\n", line, fmtClock(p.Estimate()))
}

func (pg *progress) skip() {
	pg.mu.Lock()
	pg.done_++
	pg.mu.Unlock()
}

// begin starts a phase of run r that has no load figures (deploying,
// warm-up before the generator's first report).
func (pg *progress) begin(r Run, phase string) {
	pg.mu.Lock()
	if r.ID != pg.run.ID || pg.runStart.IsZero() {
		pg.runStart = time.Now()
	}
	pg.run, pg.phase, pg.last, pg.total, pg.gen = r, phase, load.Progress{}, nil, nil
	pg.mu.Unlock()
	pg.print(true)
}

// update takes the load generator's report of the last second; a change
// of phase (warm-up to measuring) always gets a line.
func (pg *progress) update(lp load.Progress) {
	pg.mu.Lock()
	pg.last = lp
	phase := "measuring"
	if lp.Warmup {
		phase = "warm-up"
	}
	changed := phase != pg.phase
	pg.phase = phase
	pg.mu.Unlock()
	pg.print(changed)
}

// measured keeps the whole measurement's totals for the run's result
// line.
func (pg *progress) measured(res *load.Result) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if tot, ok := res.Op("total"); ok {
		pg.total = &tot
	}
	g := res.Generator
	pg.gen = &g
}

// telemetry prints where the current run's telemetry backends are, each
// by name, on a line of its own.
func (pg *progress) telemetry(urls map[string]string) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(urls)) {
		parts = append(parts, name+" "+urls[name])
	}
	pg.emit(pg.label()+": "+strings.Join(parts, "  "), true)
}

// finish prints the run's result line: its status, marked when the load
// generator's self-audit flagged the run, and, when the load ran, the
// whole measurement's requests, rate, errors and percentiles.
func (pg *progress) finish(rf *RunFile) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.done_++
	if !pg.runStart.IsZero() {
		pg.ran++
		pg.ranFor += time.Since(pg.runStart)
		pg.runStart = time.Time{}
	}
	line := pg.label() + ": " + rf.Status
	if _, ok := warn.Find(rf.Warnings, warn.GeneratorBottleneck); ok && rf.Status == "ok" {
		line += ", flagged: " + flagNote(pg.gen, pg.total)
	}
	if t := pg.total; t != nil && t.Count > 0 {
		line += fmt.Sprintf(" | %d requests  %.1f rps  %d err  p50 %.2f ms  p99 %.2f ms",
			t.Count, t.RPS, t.Errors, t.Latency.P50Ms, t.Latency.P99Ms)
	}
	line += " | " + pg.clock(time.Now())
	pg.emit(line, true)
}

// flagNote says in a few words how far a run the generator flagged is
// off: its send lag as a share of the latency's p99 (how much of the
// percentile the generator alone could have put there), the arrivals it
// dropped, and its CPU when the lag is small beside the p99, so the
// cause lies elsewhere. The whole reason is in run.json's warnings.
func flagNote(g *load.Generator, t *load.Operation) string {
	if g == nil {
		return "the load generator fell behind (run.json's warnings say why)"
	}
	var parts []string
	share := -1.0
	if t != nil && t.Latency.P99Ms > 0 && g.LagP99Ms > 0 {
		share = g.LagP99Ms / t.Latency.P99Ms
		parts = append(parts, fmt.Sprintf("send lag %.0f%% of p99", 100*share))
	}
	if g.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d arrivals dropped", g.Dropped))
	}
	if share < 0.1 {
		parts = append(parts, fmt.Sprintf("generator CPU %.0f%%", g.CPUPercent))
	}
	return strings.Join(parts, ", ")
}

// done ends a live line left open by an interruption or a failure.
func (pg *progress) done() {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.open {
		fmt.Fprintln(pg.w)
		pg.open, pg.width = false, 0
	}
}

func (pg *progress) print(force bool) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	now := time.Now()
	if !pg.live && !force && now.Sub(pg.lastLine) < pg.every {
		return
	}
	pg.lastLine = now
	line := pg.label() + " " + pg.phase
	if lp := pg.last; (pg.phase == "measuring" || pg.phase == "warm-up") && (lp.Warmup || lp.Elapsed > 0) {
		// Warm-up has no totals: its figures are the last second's.
		at, errs := fmt.Sprintf(" %.0fs/%s", lp.Elapsed.Seconds(), pg.plan.Duration), lp.TotalErrors
		if lp.Warmup {
			at, errs = "", lp.Errors
		}
		line += fmt.Sprintf("%s | %.1f rps  %d err  p99 %.2f ms", at, lp.RPS, errs, float64(lp.P99)/1e6)
	}
	pg.emit(line+" | "+pg.clock(now), false)
}

// label names the current run: its place in the plan, its ID and its
// factors' levels (none when the spec has no factors).
func (pg *progress) label() string {
	keys := make([]string, 0, len(pg.run.Levels))
	for k := range pg.run.Levels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{fmt.Sprintf("run %d/%d %s", pg.run.Index, len(pg.plan.Runs), pg.run.ID)}
	for _, k := range keys {
		level := spec.FormatValue(pg.run.Levels[k])
		for _, f := range pg.plan.Design.Factors {
			if f.Name == k && f.Linked() {
				level = "{" + f.FormatLevel(pg.run.Levels[k]) + "}"
			}
		}
		parts = append(parts, k[strings.LastIndex(k, ".")+1:]+"="+level)
	}
	return strings.Join(parts, " ")
}

// clock is the experiment's elapsed time and an estimate of what is left:
// from the plan until a run has finished, then from the runs so far.
func (pg *progress) clock(now time.Time) string {
	per := pg.plan.Estimate() / time.Duration(max(1, len(pg.plan.Runs)))
	if pg.ran > 0 {
		per = pg.ranFor / time.Duration(pg.ran)
	}
	left := time.Duration(len(pg.plan.Runs)-pg.done_) * per
	switch {
	case pg.runStart.IsZero():
		// Between runs (a result line): the finished run is not left.
	case pg.ran > 0:
		left -= min(per, now.Sub(pg.runStart))
	case pg.phase == "measuring":
		left -= pg.last.Elapsed
	}
	return fmt.Sprintf("elapsed %s  left ~%s", fmtClock(now.Sub(pg.start)), fmtClock(max(0, left)))
}

// emit writes a line: on a terminal it rewrites the open line, and a
// final line (a run's result) stays; elsewhere every line is its own.
func (pg *progress) emit(line string, final bool) {
	if !pg.live {
		fmt.Fprintln(pg.w, line)
		return
	}
	pad := ""
	if n := pg.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	if final {
		fmt.Fprintf(pg.w, "\r%s%s\n", line, pad)
		pg.open, pg.width = false, 0
		return
	}
	fmt.Fprintf(pg.w, "\r%s%s", line, pad)
	pg.open, pg.width = true, len(line)
}

func fmtClock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
