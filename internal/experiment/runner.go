package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/load"
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
		if got := SpecHash(s); got != ef.SpecSHA256 {
			return nil, fmt.Errorf("%w: %s or its --set overrides have changed since the experiment in %s started (sha256 %.12s, recorded %.12s; overrides then: %q): restore them, or start a new experiment without --resume", ErrResumeMismatch, s.Path, st.Dir, got, ef.SpecSHA256, ef.Overrides)
		}
		seed = ef.Seed
		if committed, err = st.Committed(); err != nil {
			return nil, err
		}
		p, prepared, err := PlanSpec(ctx, s, seed)
		if err != nil {
			return nil, err
		}
		noticeInert(logw, p)
		if err := samePlan(p, ef); err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrResumeMismatch, st.Dir, err)
		}
		iso, err := DecideIsolation(s, logw)
		if err != nil {
			return nil, err
		}
		return execute(ctx, st, p, prepared, committed, opts, logw, &iso, calibrateHost(ctx, logw))
	}
	p, prepared, err := PlanSpec(ctx, s, ClockSeed(seed))
	if err != nil {
		return nil, err
	}
	noticeInert(logw, p)
	iso, err := DecideIsolation(s, logw)
	if err != nil {
		return nil, err
	}
	root := opts.ResultsRoot
	if root == "" {
		root = "results"
	}
	ef := NewExperimentFile(p, opts.Version, opts.Commit, time.Now())
	ef.HostTimer = calibrateHost(ctx, logw)
	ef.Isolation = &iso
	st, err = CreateStore(root, ef, time.Now())
	if err != nil {
		return nil, err
	}
	return execute(ctx, st, p, prepared, committed, opts, logw, &iso, ef.HostTimer)
}

// noticeInert says which design points set keys that do nothing in them.
func noticeInert(w io.Writer, p *Plan) {
	for _, n := range p.Inert() {
		fmt.Fprintf(w, "notice: %s\n", n)
	}
}

// samePlan checks that a resumed plan is the one experiment.json recorded,
// which the seed and an unchanged spec guarantee unless svclab changed.
func samePlan(p *Plan, ef *ExperimentFile) error {
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

func execute(ctx context.Context, st *Store, p *Plan, prepared map[string]*Prepared, committed map[string]bool, opts Options, logw io.Writer, iso *Isolation, floor *hostclock.Calibration) (_ *Outcome, err error) {
	out := &Outcome{Dir: st.Dir, Runs: len(p.Runs), Isolated: iso.DeployCPUs() != ""}
	start := time.Now()
	prog := newProgress(logw, opts.Live, p, start)
	leave, err := iso.Enter()
	if err != nil {
		return out, fmt.Errorf("isolate the load generator: %w", err)
	}
	defer func() { err = errors.Join(err, leave()) }()
	// Backing services (a database) are part of the system under test: they
	// start on its CPUs, as every deployment does (Isolation.AsSUT).
	var pool *backing.Pool
	if err := iso.AsSUT(func() (err error) { pool, err = startBacking(ctx, prepared, logw); return err }); err != nil {
		return out, err
	}
	defer closeBacking(pool, logw)
	if len(committed) > 0 {
		fmt.Fprintf(logw, "resuming %s: %d of %d runs already committed\n", st.Dir, len(committed), len(p.Runs))
	}
	for i, r := range p.Runs {
		if committed[r.ID] {
			out.Resumed++
			prog.skip()
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("%w before run %d; continue with: svclab run --resume %s %s", ErrInterrupted, r.Index, st.Dir, p.Spec.Path)
		}
		rf, err := runOne(ctx, st, r, prepared[r.ID], p, prog, iso, floor)
		if err != nil {
			if ctx.Err() != nil {
				prog.done()
				return out, fmt.Errorf("%w during run %d (%s), which will be redone; continue with: svclab run --resume %s %s", ErrInterrupted, r.Index, r.ID, st.Dir, p.Spec.Path)
			}
			// A run that could not be recorded (a full disk, say) failed.
			out.Failed++
			prog.done()
			return out, fmt.Errorf("run %d (%s) failed: %w", r.Index, r.ID, err)
		}
		prog.finish(rf)
		if len(rf.Thresholds) > 0 {
			out.Breached++
			fmt.Fprintf(logw, "run %d/%d %s broke thresholds: %s\n", r.Index, len(p.Runs), r.ID, strings.Join(rf.Thresholds, "; "))
		}
		if _, ok := warn.Find(rf.Warnings, warn.GeneratorBottleneck); ok && rf.Status == "ok" {
			out.Bottlenecked++
		}
		if _, ok := warn.Find(rf.Warnings, warn.Saturated); ok && rf.Status == "ok" {
			out.Saturated++
		}
		if w, ok := warn.Find(rf.Warnings, warn.Stalled); ok && rf.Status == "ok" {
			out.Stalled++
			fmt.Fprintf(logw, "run %d/%d %s %s\n", r.Index, len(p.Runs), r.ID, w.Text)
		}
		if rf.Status == "ok" {
			out.OK++
		} else {
			out.Failed++
			fmt.Fprintf(logw, "run %d/%d %s failed: %s\n", r.Index, len(p.Runs), r.ID, rf.Reason)
			if opts.FailFast {
				prog.done()
				return out, fmt.Errorf("run %s failed (--fail-fast): %s", r.ID, rf.Reason)
			}
		}
		if th := prepared[r.ID].Load.Thresholds; len(rf.Thresholds) > 0 && th != nil && th.AbortOnFail {
			prog.done()
			return out, fmt.Errorf("%w in run %d (%s); continue with: svclab run --resume %s %s", ErrThresholdAbort, r.Index, r.ID, st.Dir, p.Spec.Path)
		}
		if i < len(p.Runs)-1 && p.Cooldown > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(p.Cooldown):
			}
		}
	}
	prog.done()
	out.Elapsed = time.Since(start)
	return out, nil
}

// runOne deploys, loads, tears down and commits one run. A failure of the
// system under test is recorded in the run; only a failure to write results
// or an interruption is returned as an error.
func runOne(ctx context.Context, st *Store, r Run, pr *Prepared, p *Plan, prog *progress, iso *Isolation, floor *hostclock.Calibration) (*RunFile, error) {
	w, err := st.BeginRun(r.ID)
	if err != nil {
		return nil, err
	}
	rf := &RunFile{
		ID: r.ID, Index: r.Index, Repetition: r.Repetition, Levels: r.Levels,
		Started: time.Now().UTC().Format(time.RFC3339Nano),
		WarmupS: p.Warmup.Seconds(), DurationS: p.Duration.Seconds(),
		Warnings: []warn.Warning{}, Status: "ok",
	}
	prog.begin(r, "deploying")
	fail := func(reason string, tails map[string]string) {
		rf.Status, rf.Reason = "failed", reason
		if len(tails) > 0 {
			rf.StderrTail = tails
		}
	}

	var dep deploy.Deployment
	derr := iso.AsSUT(func() (err error) {
		dep, err = pr.Deployer.Deploy(ctx, pr.Runtime, pr.DeployOptions(iso))
		return err
	})
	if derr != nil {
		if ctx.Err() != nil {
			w.Abort()
			return nil, ctx.Err()
		}
		fail(oomPrefix(derr)+fmt.Sprintf("deploy: %v", derr), nil)
		return rf, commitRun(w, rf)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = dep.Stop(sctx)
		}
	}
	defer stop()

	// The load generator shares the machine with what it measures, so its
	// own CPU is part of the record.
	self, err := procstat.Self()
	if err != nil {
		return nil, err
	}
	sampled := []Sampled{{Process: deploy.ProcessInfo{Name: "loadgen", Role: deploy.RoleLoadGen, PID: os.Getpid(), Limits: iso.loadgenLimits()}, Source: self}}
	for _, dp := range dep.Processes() {
		sampled = append(sampled, Sampled{Process: dp.Info(), Source: dp.Resources()})
	}
	if bs := dep.Capabilities().Backends; bs != nil {
		for _, b := range bs.Backends() {
			sampled = append(sampled, Sampled{Process: b.Info, Source: b.Source})
		}
	}
	for _, s := range sampled {
		rf.Processes = append(rf.Processes, s.Process)
	}
	sampler := NewResourceSampler(sampled, time.Second)
	sampler.Stream(dep)
	gens := newGenerators(iso)
	if autoscaled(dep) || pr.Load.GeneratorCount() > 1 {
		sampler.Follow(gens.follow(dep, autoscaled(dep)))
	}
	sctx, cancelSampler := context.WithCancel(ctx)
	defer cancelSampler()
	sampler.Start(sctx, time.Now().Add(p.Warmup))

	sent := &callCounter{}
	// A deployment that runs the load itself (a cluster's Job) needs no
	// target here: the entry is reachable only from inside.
	inside := dep.Capabilities().Load
	var target *load.Target
	if inside == nil {
		target, err = targetFor(ctx, pr, dep, sent)
	}
	if err != nil {
		if ctx.Err() != nil {
			w.Abort()
			return nil, ctx.Err()
		}
		fail(fmt.Sprintf("load target: %v", err), tails(dep))
		return rf, commitRun(w, rf)
	}
	if target != nil && target.Close != nil {
		defer target.Close()
	}

	// A service that dies during the run ends the load early: what comes
	// after is not a measurement of the variant.
	lctx, cancelLoad := context.WithCancel(ctx)
	defer cancelLoad()
	var crashed deploy.Process
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case proc := <-dep.Exited():
			crashed = proc
			cancelLoad()
		case <-lctx.Done():
		}
	}()

	cfg := pr.Load
	cfg.Warmup = load.Duration(p.Warmup)
	cfg.Duration = load.Duration(p.Duration)
	prog.begin(r, "warm-up")
	measureStart := time.Now().Add(p.Warmup)
	// Faults are timed from the measurement's start, which a generator in
	// this process reports once its warm-up (by time or by calls) is over;
	// generator processes and pods warm up for load.warmup exactly.
	measuring := make(chan time.Time, 1)
	opt := load.Options{Progress: prog.update, HostTimer: floor, Sentinel: hostclock.SentinelExecutable()}
	if inside == nil && cfg.GeneratorCount() == 1 {
		opt.Measuring = func(t time.Time) {
			select {
			case measuring <- t:
			default:
			}
		}
	} else {
		measuring <- measureStart
	}
	faults := startFaults(lctx, dep, pr.Runtime.Faults, measuring, p.Duration)
	var res *load.Result
	var lerr error
	if inside != nil {
		res, lerr = inside.RunLoad(lctx, cfg, load.Options{Progress: prog.update})
	} else {
		res, lerr = gens.runLoad(lctx, pr, dep, cfg, target, opt)
	}
	cancelLoad()
	<-watchDone
	cancelSampler()
	if ctx.Err() != nil {
		if res != nil {
			res.Close()
		}
		w.Abort()
		return nil, ctx.Err()
	}
	if res != nil && !res.Started.IsZero() { // nil: several generators failed
		measureStart = res.MeasureStart(p.Warmup) // earlier after a warm-up by calls
	}
	sampler.SetZero(measureStart)
	rf.Faults, err = faults.stop(measureStart)
	switch {
	case err != nil && crashed == nil:
		fail(fmt.Sprintf("faults: %v", err), tails(dep))
	case crashed != nil:
		<-crashed.Done()
		info := crashed.Info()
		exit := crashed.Exit()
		what := fmt.Sprintf("group %s (components %s)", info.Group, strings.Join(info.Components, ", "))
		if info.Role != deploy.RoleHost {
			what = info.String() // a sidecar proxy
		}
		fail(oomPrefix(exit)+fmt.Sprintf("%s exited during the run: %s", what, exit.Status), tails(dep))
	case lerr != nil:
		fail(fmt.Sprintf("load: %v", lerr), tails(dep))
	}
	stop()
	if res != nil {
		defer res.Close()
		prog.measured(res)
		if err := res.WriteDir(w.Dir); err != nil {
			return nil, err
		}
		rf.Generator = res.Generator
		rf.Warmup = res.Warmup
		rf.Warnings = append(rf.Warnings, res.Warnings...)
		for _, b := range pr.Load.Thresholds.Check(res.Summary) {
			rf.Thresholds = append(rf.Thresholds, b.String())
		}
		if tot, ok := res.Op("total"); ok && rf.Status == "ok" {
			switch {
			case tot.Count == 0:
				// A run without a single measured request has no latency
				// to analyse: calling it ok would leave an empty cell.
				fail(fmt.Sprintf("no request completed in the %.3g s measurement window: raise load.duration or load.rate", res.Summary.DurationS), tails(dep))
			case tot.Errors == tot.Count:
				fail(fmt.Sprintf("every one of %d requests failed (%v)", tot.Count, tot.ErrorsByClass), tails(dep))
			}
		}
	}
	if err := sampler.WriteParquet(filepath.Join(w.Dir, "resources.parquet")); err != nil {
		return nil, err
	}
	if err := writeScaling(w.Dir, dep, sampler); err != nil {
		return nil, err
	}
	rf.Processes = append(rf.Processes, sampler.Joined()...)
	if rf.Traces, err = writeTraces(w.Dir, dep, pr.Runtime.Mesh.Tracing, sent.total()); err != nil {
		rf.Warnings = append(rf.Warnings, warn.Newf(warn.Traces, "%v", err))
	} else if rf.Traces != nil {
		rf.Warnings = append(rf.Warnings, rf.Traces.Problems()...)
	}
	if err := writeMetrics(w.Dir, dep, pr.Runtime.Mesh.Metrics, measureStart); err != nil {
		rf.Warnings = append(rf.Warnings, warn.Newf(warn.Metrics, "%v", err))
	}
	return rf, commitRun(w, rf)
}

// tails collects the last output lines of every process of a deployment
// that printed any.
func tails(dep deploy.Deployment) map[string]string {
	out := deploy.StderrTails(dep.Processes())
	maps.DeleteFunc(out, func(_, tail string) bool { return tail == "" })
	return out
}

func commitRun(w *RunWriter, rf *RunFile) error {
	rf.Ended = time.Now().UTC().Format(time.RFC3339Nano)
	if err := w.WriteJSON("run.json", rf); err != nil {
		return err
	}
	return w.Commit()
}
