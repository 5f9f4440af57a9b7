package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Plan is the ordered list of runs an experiment makes.
type Plan struct {
	Spec   *spec.Spec
	Design *Design
	Seed   int64
	Runs   []Run
	// Repetitions is how many times the runs go through the design:
	// experiment.repetitions, or the most blocks the budget of an
	// until = "decided" experiment allows (Sequential).
	Repetitions int
	// Warmup, Duration and Cooldown time each run.
	Warmup, Duration, Cooldown time.Duration
	// specs holds each design point's effective spec, by point, when the
	// plan keeps them (NewPlan); SpecOf makes one otherwise.
	specs []*spec.Spec
	// overhead is each design point's expected deployment and teardown
	// (deployOverhead), by point; nil means perRunOverhead for every one.
	overhead []time.Duration
}

// Run is one deployment measured once.
type Run struct {
	ID         string         `json:"id"`
	Index      int            `json:"index"`      // 1-based position in run order
	Repetition int            `json:"repetition"` // 1-based
	Point      Point          `json:"-"`
	Levels     map[string]any `json:"levels"`
	// point is the index of Point in the design, for Plan.SpecOf.
	point int
}

// SpecOf is the effective spec of run r, with its levels applied. Planning
// checked it, so that it cannot fail here.
func (p *Plan) SpecOf(r Run) *spec.Spec {
	if p.specs != nil {
		return p.specs[r.point]
	}
	rs, err := p.Spec.With(r.Levels)
	if err != nil {
		panic(fmt.Sprintf("design point %d was checked while planning, and now: %v", r.point+1, err))
	}
	return rs
}

// Timing gives the per-run durations the planner cannot take from the spec
// alone, because the [load] table belongs to the load generator.
type Timing struct {
	Warmup, Duration time.Duration
	// Requests is what an open loop sends over the warm-up and the
	// measurement (load.rate, load.warmup_rate), for the time estimate;
	// 0 when not known ahead (a closed loop, stages).
	Requests float64
}

// perRunOverhead estimates deploying and tearing down one run, for the
// time estimate only.
const perRunOverhead = 1500 * time.Millisecond

// What the mesh features add to a run's deployment and teardown, as
// measured on a 2-core machine with the three-hop chain, each hop its own
// process with an Envoy sidecar (run.json's started to ended, less warm-up
// and measurement). Tracing starts a Jaeger and, once the deployment
// stops, reads every span back and checks them, which grows with the
// requests traced and with how busy the machine is: with load averages of
// 13 to 23 from other work (2026-11-28, experiments/s2-mesh.toml at r = 1),
// 14 to 18 s at 10 req/s and 23 to 53 s at 100 req/s, metrics and the
// sidecar included; on the quiet machine the whole of s2-mesh.toml took
// 27 min 52 s, about what a flat 9.5 s gives. 7 s and 8 ms a traced
// request sit between the two, within 25% of both (docs/SPEC.md, "Time
// estimate"). Metrics starts a Prometheus and scrapes it at the end (6.7
// to 7.0 s, 4 runs); an Envoy sidecar per process 1.3 s (2 runs).
const (
	tracingOverhead   = 7 * time.Second
	tracedRequestCost = 8 * time.Millisecond
	metricsOverhead   = 6500 * time.Millisecond
	sidecarOverhead   = 1200 * time.Millisecond
	// A Java host's start: the JVM and Spring, ready in 1.6 s from the
	// class-data archive and 2.7 s without it (docs/PERFORMANCE.md, "A
	// Java host's start"); the select app with a Java selector ran 1.75 s
	// a run longer than the local estimate (2026-11-29). The hosts start
	// together, so one start counts, however many Java components.
	javaOverhead = 2 * time.Second
)

// deployOverhead is the expected deployment and teardown of a run of rs
// whose load is t.
func deployOverhead(rs *spec.Spec, t Timing) time.Duration {
	d := addSat(perRunOverhead, deployerTraits(rs).RunOverhead)
	if rs.Deploy.Tracing > 0 {
		traced := t.Requests * min(rs.Deploy.Tracing, 1) * float64(tracedRequestCost)
		d = addSat(d, addSat(tracingOverhead, time.Duration(min(traced, float64(maxDuration/2)))))
	}
	if rs.Deploy.Metrics {
		d = addSat(d, metricsOverhead)
	}
	if rs.Deploy.Sidecar != "" && rs.Deploy.Sidecar != "none" {
		d = addSat(d, sidecarOverhead)
	}
	if slices.Contains(slices.Collect(maps.Values(rs.Deploy.Languages)), runtime.LangJava) {
		d = addSat(d, javaOverhead)
	}
	return d
}

// NewPlan expands the spec's design into ordered runs. seed is used when the
// spec names none; the plan records the seed it used. loadTiming is called
// per run to read the warm-up and measurement durations from its effective
// [load] table, and may report errors in that table. Planning stops when
// ctx ends: checking every design point of a large design takes a while.
func NewPlan(ctx context.Context, s *spec.Spec, seed int64, loadTiming func(*spec.Spec) (Timing, error)) (*Plan, error) {
	return newPlan(ctx, s, seed, loadTiming, true)
}

// newPlan is NewPlan; keep says whether the plan holds every design
// point's effective spec, or makes each again when asked (SpecOf), so that
// planning a large design takes memory for its runs only.
func newPlan(ctx context.Context, s *spec.Spec, seed int64, loadTiming func(*spec.Spec) (Timing, error), keep bool) (*Plan, error) {
	d, err := NewDesign(ctx, s)
	if err != nil {
		return nil, err
	}
	e := s.Experiment
	if e.Seed != nil {
		seed = *e.Seed
	}
	p := &Plan{Spec: s, Design: d, Seed: seed, Cooldown: e.Cooldown.D()}

	// Each design point gets its effective spec once; repetitions share it.
	// Every design point is checked, and the errors of all of them are
	// reported together, each once.
	var specs []*spec.Spec
	if keep {
		specs = make([]*spec.Spec, len(d.Points))
	}
	var errs spec.Errors
	p.overhead = make([]time.Duration, len(d.Points))
	timed, mismatched := -1, false // the first point whose timing is known; one differing from it said
	for i, pt := range d.Points {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("planning stopped after checking %d of %d design points: %w", i, len(d.Points), context.Cause(ctx))
		}
		levels := d.levels(pt)
		rs, withErr := s.With(levels)
		if rs == nil {
			errs.Add(withErr)
			continue
		}
		t, err := loadTiming(rs)
		if withErr != nil || err != nil {
			// The point's other tables are checked beside the mistakes
			// of its [deploy], which they may read as defaults.
			var pe spec.Errors
			pe.Add(withErr)
			pe.AddLater(err)
			errs.Add(pe.Err())
			continue
		}
		if e.Warmup != nil {
			t.Warmup = e.Warmup.D()
		}
		if e.Duration != nil {
			t.Duration = e.Duration.D()
		}
		switch {
		case timed < 0:
			timed, p.Warmup, p.Duration = i, t.Warmup, t.Duration
		case (t.Warmup != p.Warmup || t.Duration != p.Duration) && !mismatched:
			errs.Add(s.Errorf("experiment.factors", "every run must have the same warm-up and duration, but %s has %s and %s where %s has %s and %s; set experiment.warmup and experiment.duration rather than making them factors",
				d.Describe(pt), t.Warmup, t.Duration, d.Describe(d.Points[timed]), p.Warmup, p.Duration))
			mismatched = true
		}
		if keep {
			specs[i] = rs
		}
		p.overhead[i] = deployOverhead(rs, t)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	p.specs = specs
	p.Repetitions = e.Repetitions
	if e.Until == spec.UntilDecided {
		p.Repetitions = p.maxBlocks()
	}
	type slot struct {
		point, rep int
	}
	var order []slot
	switch e.Order {
	case "sequential":
		for pi := range d.Points {
			for r := 1; r <= p.Repetitions; r++ {
				order = append(order, slot{pi, r})
			}
		}
	default: // interleaved, blocked and random start from one slot per point per repetition
		for r := 1; r <= p.Repetitions; r++ {
			for pi := range d.Points {
				order = append(order, slot{pi, r})
			}
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5c1ab))
		swap := func(o []slot) func(i, j int) { return func(i, j int) { o[i], o[j] = o[j], o[i] } }
		switch e.Order {
		case "blocked":
			// Every point once per repetition, as interleaved, but in an
			// order drawn anew for each repetition: a point never always
			// follows the same other one, so what a run leaves behind (a
			// warm cache, a collector still ingesting) cannot favour one
			// level, and each repetition stays a block of one stretch of
			// the machine's drift.
			for start := 0; start < len(order); start += len(d.Points) {
				block := order[start : start+len(d.Points)]
				rng.Shuffle(len(block), swap(block))
			}
		case "random":
			rng.Shuffle(len(order), swap(order))
		}
	}

	p.Runs = make([]Run, 0, len(order))
	for i, sl := range order {
		if err := stopped(ctx, i, "ordering the runs"); err != nil {
			return nil, err
		}
		pt := d.Points[sl.point]
		levels := d.levels(pt)
		p.Runs = append(p.Runs, Run{
			ID:         runID(i+1, levels, sl.rep),
			Index:      i + 1,
			Repetition: sl.rep,
			Point:      pt,
			Levels:     levels,
			point:      sl.point,
		})
	}
	if p.Estimate() == maxDuration {
		key := "load.duration"
		if e.Duration != nil {
			key = "experiment.duration"
		}
		return nil, s.Errorf(key, "%d runs of warm-up %s, measurement %s and cool-down %s each would take more than 292 years, longer than svclab can count; shorten them or make fewer runs",
			len(p.Runs), p.Warmup, p.Duration, p.Cooldown)
	}
	return p, nil
}

func (d *Design) levels(p Point) map[string]any {
	m := make(map[string]any, len(p))
	for i, li := range p {
		m[d.Factors[i].Name] = d.Factors[i].Levels[li]
	}
	return m
}

// runID names a run by its position and a short hash of what it runs, so a
// directory listing sorts in run order and a changed plan shows.
func runID(index int, levels map[string]any, rep int) string {
	b, _ := json.Marshal(struct {
		L map[string]any
		R int
	}{levels, rep}) // json sorts map keys, so the hash is stable
	h := sha256.Sum256(b)
	return fmt.Sprintf("r%03d-%s", index, hex.EncodeToString(h[:3]))
}

// Shuffled says whether the seed drew the plan's order: a random order,
// or a blocked one (each repetition's points shuffled), as a sequential
// design's is.
func (p *Plan) Shuffled() bool {
	o := p.Spec.Experiment.Order
	return o == "random" || o == "blocked"
}

// ClockSeed returns seed, or one from the clock when it is zero, so every
// plan has a seed to record. It stays below 2^53, exact as a JSON number.
func ClockSeed(seed int64) int64 {
	if seed != 0 {
		return seed
	}
	return time.Now().UnixNano() & (1<<53 - 1)
}

// maxDuration is the longest time.Duration, 292 years; time
// arithmetic in planning saturates there rather than wrapping negative.
const maxDuration = time.Duration(math.MaxInt64)

// Estimate is the expected wall time of the whole plan, or maxDuration
// when that does not fit in a time.Duration (NewPlan refuses such plans).
// A sequential plan adds the analysis's look after each block.
func (p *Plan) Estimate() time.Duration {
	if p.overhead == nil {
		return mulSat(p.perRun(perRunOverhead), len(p.Runs))
	}
	runs := make([]int, len(p.overhead))
	for _, r := range p.Runs {
		runs[r.point]++
	}
	total := time.Duration(0)
	for pt, n := range runs {
		total = addSat(total, mulSat(p.perRun(p.overhead[pt]), n))
	}
	if p.Sequential() {
		total = addSat(total, mulSat(decideOverhead, p.Repetitions))
	}
	return total
}

// decideOverhead is the analysis's answer after a block of a sequential
// experiment (svclab-analysis decide), as measured.
const decideOverhead = 5 * time.Second

// blockEstimate is the expected wall time of one block of a sequential
// plan: every design point once, and the analysis's look.
func (p *Plan) blockEstimate() time.Duration {
	total := decideOverhead
	for pt := range p.Design.Points {
		o := time.Duration(perRunOverhead)
		if p.overhead != nil {
			o = p.overhead[pt]
		}
		total = addSat(total, p.perRun(o))
	}
	return total
}

// perRun is the expected wall time of one run with the given deployment
// overhead, saturating at maxDuration.
func (p *Plan) perRun(overhead time.Duration) time.Duration {
	per := time.Duration(0)
	for _, d := range []time.Duration{p.Warmup, p.Duration, p.Cooldown, overhead} {
		per = addSat(per, d)
	}
	return per
}

// mulSat is d times n, saturating at maxDuration.
func mulSat(d time.Duration, n int) time.Duration {
	if n > 0 && d > maxDuration/time.Duration(n) {
		return maxDuration
	}
	return d * time.Duration(n)
}

// addSat adds two non-negative durations, saturating at maxDuration.
func addSat(a, b time.Duration) time.Duration {
	if a > maxDuration-b {
		return maxDuration
	}
	return a + b
}

// Inert lists what spec.Inert and the app's notices (runtime.Notices) say
// of each design point, once per saying, with the points (1-based, as
// `svclab plan` numbers them) it holds for.
func (p *Plan) Inert() []string {
	planned := make(map[int]Run, len(p.Design.Points))
	for _, r := range p.Runs {
		if _, ok := planned[r.point]; !ok {
			planned[r.point] = r
		}
	}
	points := map[string][]string{}
	var order []string
	for i := range p.Design.Points {
		r, ok := planned[i]
		if !ok {
			continue
		}
		s := p.SpecOf(r)
		notes := s.Inert()
		if cfg, err := runtime.DecodeApp(s); err == nil {
			notes = append(notes, runtime.Notices(cfg)...)
		}
		for _, note := range notes {
			if _, ok := points[note]; !ok {
				order = append(order, note)
			}
			points[note] = append(points[note], fmt.Sprint(i+1))
		}
	}
	out := make([]string, 0, len(order))
	for _, note := range order {
		if len(p.Design.Factors) == 0 {
			out = append(out, note)
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s", pointsPhrase(points[note]), note))
	}
	return out
}

// pointsPhrase names design points: "design point 3", "design points 3
// and 7", "design points 1, 3 and 5".
func pointsPhrase(nums []string) string {
	if len(nums) == 1 {
		return "design point " + nums[0]
	}
	return "design points " + strings.Join(nums[:len(nums)-1], ", ") + " and " + nums[len(nums)-1]
}
