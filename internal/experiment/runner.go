package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/warn"
)

// Options configure Execute.
type Options struct {
	// ResultsRoot is where new results directories are made ("results").
	ResultsRoot string
	// ResumeDir, when set, continues the experiment in that directory.
	ResumeDir string
	// FailFast stops at the first failed run.
	FailFast bool
	// Seed orders the runs when the spec sets no seed; 0 means the clock.
	Seed int64
	// Version and Commit identify the binary in experiment.json.
	Version, Commit string
	// Log receives the progress line and messages; nil discards them.
	Log io.Writer
	// Live rewrites the progress line in place (a terminal); otherwise a
	// line is printed every few seconds.
	Live bool
	// Events, when set, receives every run's events as they happen
	// (stream.go): a live view subscribes to it before Execute.
	Events *Stream
	// Decide asks the analysis after each block of an experiment.until =
	// "decided" experiment (sequential.go).
	Decide DecideFunc
}

// Outcome summarises an experiment.
type Outcome struct {
	Dir                 string
	OK, Failed, Resumed int
	// Breached counts the runs that broke a threshold of
	// [load.thresholds]; they are committed and counted as OK or Failed
	// too.
	Breached int
	// Bottlenecked counts the runs whose load generator fell behind
	// (a generator_bottleneck warning): their latencies hold its lag.
	Bottlenecked int
	// Saturated counts the ok runs that completed far fewer requests than
	// offered (a saturated warning): the system under test fell behind.
	Saturated int
	// Stalled counts the ok runs in whose window the system under test
	// stopped answering for a second or more (a stalled warning).
	Stalled int
	// Isolated says the generator had CPUs of its own
	// (experiment.isolation = "cpuset").
	Isolated bool
	Runs     int
	Elapsed  time.Duration
	// Stopped says why a sequential experiment ended; nil for a fixed
	// design.
	Stopped *Stopped
}

// RunFile is run.json.
type RunFile struct {
	ID         string            `json:"id"`
	Index      int               `json:"index"`
	Repetition int               `json:"repetition"`
	Levels     map[string]any    `json:"levels"`
	Status     string            `json:"status"`
	Reason     string            `json:"reason"`
	StderrTail map[string]string `json:"stderr_tail,omitempty"`
	Started    string            `json:"started"`
	Ended      string            `json:"ended"`
	WarmupS    float64           `json:"warmup_s"`
	DurationS  float64           `json:"duration_s"`
	Warnings   []warn.Warning    `json:"warnings"`
	// Thresholds lists the thresholds of [load.thresholds] the run broke.
	Thresholds []string             `json:"thresholds,omitempty"`
	Generator  any                  `json:"generator,omitempty"`
	Processes  []deploy.ProcessInfo `json:"processes"`
	// Traces is the check of a run with deploy.tracing (traces.go).
	Traces *TraceCheck `json:"traces,omitempty"`
	// Faults are the windows of [deploy.faults] as injected (faults.go).
	Faults []FaultRecord `json:"faults,omitempty"`
	// Warmup is what a warm-up by calls did (load.warmup_calls).
	Warmup *load.Warmup `json:"warmup,omitempty"`
}

// ErrInterrupted is returned when the context ends mid-experiment; the
// committed runs are kept and --resume continues.
var ErrInterrupted = errors.New("experiment interrupted")

// ErrThresholdAbort is returned when a run broke a threshold and
// load.thresholds.abort_on_fail asked to stop there, as k6's abortOnFail
// does; the committed runs are kept and --resume continues.
var ErrThresholdAbort = errors.New("threshold broken with abort_on_fail")

// ErrResumeMismatch is returned by a resume whose spec, overrides or plan
// differ from the experiment's: the user's input, found before any run.
var ErrResumeMismatch = errors.New("cannot resume")

// Execute runs (or resumes) the experiment a spec describes and returns where
// its results are.
func Execute(ctx context.Context, s *spec.Spec, opts Options) (*Outcome, error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	var (
		st        *Store
		committed = map[string]bool{}
		seed      = opts.Seed
	)
	if opts.ResumeDir != "" {
		var ef *ExperimentFile
		var err error
		st, ef, err = OpenStore(opts.ResumeDir)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrResumeMismatch, err)
		}
		if got := SpecHash(s); got != ef.SpecSHA256 && !budgetOnly(ef, s) {
			return nil, fmt.Errorf("%w: %s or its --set overrides have changed since the experiment in %s started (sha256 %.12s, recorded %.12s; overrides then: %q): restore them, or start a new experiment without --resume", ErrResumeMismatch, s.Path, st.Dir, got, ef.SpecSHA256, ef.Overrides)
		}
		seed = ef.Seed
		if committed, err = st.Committed(); err != nil {
			return nil, err
		}
		p, backed, err := PlanRun(ctx, s, seed)
		if err != nil {
			return nil, err
		}
		noticePlan(logw, p)
		if err := samePlan(p, ef); err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrResumeMismatch, st.Dir, err)
		}
		if err := newBudget(st, ef, p, logw); err != nil {
			return nil, err
		}
		iso, err := DecideIsolation(s, logw)
		if err != nil {
			return nil, err
		}
		return execute(ctx, st, p, backed, committed, opts, logw, &iso, calibrateHost(ctx, logw))
	}
	p, backed, err := PlanRun(ctx, s, ClockSeed(seed))
	if err != nil {
		return nil, err
	}
	noticePlan(logw, p)
	iso, err := DecideIsolation(s, logw)
	if err != nil {
		return nil, err
	}
	root := opts.ResultsRoot
	if root == "" {
		root = "results"
	}
	ef, listed := experimentHeader(p, opts.Version, opts.Commit, time.Now())
	ef.HostTimer = calibrateHost(ctx, logw)
	ef.Isolation = &iso
	st, err = createPlannedStore(root, ef, p, listed, time.Now())
	if err != nil {
		return nil, err
	}
	return execute(ctx, st, p, backed, committed, opts, logw, &iso, ef.HostTimer)
}

// noticePlan says which design points set keys that do nothing in them,
// and warns of a sequential budget too small to decide (Plan.FewBlocks),
// before anything starts.
func noticePlan(w io.Writer, p *Plan) {
	for _, n := range p.Inert() {
		fmt.Fprintf(w, "notice: %s\n", n)
	}
	if few := p.FewBlocks(); few != "" {
		fmt.Fprintf(w, "warning: %s\n", few)
	}
}

// samePlan checks that a resumed plan is the one experiment.json recorded,
// which the seed and an unchanged spec guarantee unless svclab changed.
func samePlan(p *Plan, ef *ExperimentFile) error {
	if p.Sequential() && len(ef.Runs) <= len(p.Runs) {
		p = &Plan{Runs: p.Runs[:len(ef.Runs)]} // the blocks begun
	}
	if len(p.Runs) != len(ef.Runs) {
		return fmt.Errorf("the plan now has %d runs, the experiment recorded %d; was svclab upgraded? start a new experiment", len(p.Runs), len(ef.Runs))
	}
	for i, r := range p.Runs {
		if r.ID != ef.Runs[i].ID {
			return fmt.Errorf("run %d is now %s, recorded %s; was svclab upgraded? start a new experiment", i+1, r.ID, ef.Runs[i].ID)
		}
	}
	return nil
}

// execute carries out the plan's runs after those committed, in the
// isolation iso, with the backing services of backed started first.
func execute(ctx context.Context, st *Store, p *Plan, backed []*runtime.Topology, committed map[string]bool, opts Options, logw io.Writer, iso *Isolation, floor *hostclock.Calibration) (_ *Outcome, err error) {
	x := &execution{st: st, p: p, committed: committed, opts: opts, logw: logw, iso: iso, floor: floor,
		out: &Outcome{Dir: st.Dir, Runs: len(p.Runs), Isolated: iso.DeployCPUs() != ""}}
	start := time.Now()
	x.prog = newProgress(logw, opts.Live, p, start)
	leave, err := iso.Enter()
	if err != nil {
		return x.out, fmt.Errorf("isolate the load generator: %w", err)
	}
	defer func() { err = errors.Join(err, leave()) }()
	// Backing services (a database) are part of the system under test: they
	// start on its CPUs, as every deployment does (Isolation.AsSUT).
	if err := iso.AsSUT(func() (err error) { x.pool, err = startBacking(ctx, backed, logw); return err }); err != nil {
		return x.out, err
	}
	defer closeBacking(x.pool, logw)
	if len(committed) > 0 {
		fmt.Fprintf(logw, "resuming %s: %d of %d runs already committed\n", st.Dir, len(committed), len(p.Runs))
	}
	opts.Events.Publish(Planned{Plan: p, Dir: st.Dir, Kept: committed})
	if x.seq, err = newSequential(st, p, opts.Decide, logw); err != nil {
		return x.out, err
	}
	defer x.seq.outcome(x.out)
	for i, r := range p.Runs {
		if stop, err := x.seq.before(ctx, i); stop || err != nil {
			x.keep(p.Runs[i:])
			x.prog.done()
			return x.out, err
		}
		if err := x.run(ctx, r); err != nil {
			x.prog.done()
			return x.out, err
		}
		if i < len(p.Runs)-1 && p.Cooldown > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(p.Cooldown):
			}
		}
	}
	x.prog.done()
	x.out.Elapsed = time.Since(start)
	return x.out, x.seq.end(ctx)
}

// execution is one carrying out of a plan (execute).
type execution struct {
	st        *Store
	p         *Plan
	committed map[string]bool
	opts      Options
	logw      io.Writer
	iso       *Isolation
	floor     *hostclock.Calibration
	prog      *progress
	seq       *sequential
	pool      *backing.Pool
	out       *Outcome
}

// run makes run r, unless it was committed before, and counts it; an
// error ends the experiment.
func (x *execution) run(ctx context.Context, r Run) error {
	if x.committed[r.ID] {
		x.out.Resumed++
		x.prog.skip()
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w before run %d; continue with: svclab run --resume %s %s", ErrInterrupted, r.Index, x.st.Dir, x.p.Spec.Path)
	}
	pr, err := x.prepare(r)
	if err != nil {
		return err
	}
	rf, err := runOne(ctx, x.st, r, pr, x.p, x.prog, x.iso, x.floor, x.opts.Events)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w during run %d (%s), which will be redone; continue with: svclab run --resume %s %s", ErrInterrupted, r.Index, r.ID, x.st.Dir, x.p.Spec.Path)
		}
		// A run that could not be recorded (a full disk, say) failed.
		x.out.Failed++
		return fmt.Errorf("run %d (%s) failed: %w", r.Index, r.ID, err)
	}
	x.seq.ranOne()
	x.prog.finish(rf)
	x.count(r, rf)
	return x.stopAfter(r, rf, pr.Load.Thresholds)
}

// keep counts the runs committed before among runs, which this
// invocation will not reach: a sequential experiment that stopped, now or
// before, still has them for its analysis (a resume of one that stopped
// decided runs nothing and writes the report again).
func (x *execution) keep(runs []Run) {
	for _, r := range runs {
		if x.committed[r.ID] {
			x.out.Resumed++
		}
	}
}

// prepare prepares run r's point again, with the experiment's backing
// servers unless its deployer runs its own.
func (x *execution) prepare(r Run) (*Prepared, error) {
	pr, err := x.p.Prepare(r)
	if err != nil {
		return nil, err
	}
	if usesPool(pr) {
		pr.Backing = x.pool
	}
	return pr, nil
}

// count adds a run's outcome and warnings to the experiment's, and says
// those a reader must see as they happen.
func (x *execution) count(r Run, rf *RunFile) {
	out, n := x.out, len(x.p.Runs)
	if len(rf.Thresholds) > 0 {
		out.Breached++
		fmt.Fprintf(x.logw, "run %d/%d %s broke thresholds: %s\n", r.Index, n, r.ID, strings.Join(rf.Thresholds, "; "))
	}
	if rf.Status != "ok" {
		out.Failed++
		fmt.Fprintf(x.logw, "run %d/%d %s failed: %s\n", r.Index, n, r.ID, rf.Reason)
		return
	}
	out.OK++
	if _, ok := warn.Find(rf.Warnings, warn.GeneratorBottleneck); ok {
		out.Bottlenecked++
	}
	if _, ok := warn.Find(rf.Warnings, warn.Saturated); ok {
		out.Saturated++
	}
	if w, ok := warn.Find(rf.Warnings, warn.Stalled); ok {
		out.Stalled++
		fmt.Fprintf(x.logw, "run %d/%d %s %s\n", r.Index, n, r.ID, w.Text)
	}
}

// stopAfter is the error that ends the experiment after run r: a failed
// run under --fail-fast, a broken threshold that asked to abort.
func (x *execution) stopAfter(r Run, rf *RunFile, th *load.Thresholds) error {
	if rf.Status != "ok" && x.opts.FailFast {
		return fmt.Errorf("run %s failed (--fail-fast): %s", r.ID, rf.Reason)
	}
	if len(rf.Thresholds) > 0 && th != nil && th.AbortOnFail {
		return fmt.Errorf("%w in run %d (%s); continue with: svclab run --resume %s %s", ErrThresholdAbort, r.Index, r.ID, x.st.Dir, x.p.Spec.Path)
	}
	return nil
}
