package experiment

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/warn"
)

// trialRun is one run of an experiment as it goes: its trial, what it
// measures and the run.json it fills.
type trialRun struct {
	r     Run
	pr    *Prepared
	p     *Plan
	prog  *progress
	iso   *Isolation
	floor *hostclock.Calibration
	rf    *RunFile

	t      *Trial
	events *Stream
	recs   recorderSet
	gens   *generators
	sent   *callCounter
	res    *load.Result
	lerr   error
	// measureStart is when the measurement began: planned before the
	// load, as the generator reports it after.
	measureStart time.Time
}

// runOne deploys, loads, tears down and commits one run. A failure of the
// system under test is recorded in the run; only a failure to write results
// or an interruption is returned as an error.
func runOne(ctx context.Context, st *Store, r Run, pr *Prepared, p *Plan, prog *progress, iso *Isolation, floor *hostclock.Calibration, events *Stream) (*RunFile, error) {
	w, err := st.BeginRun(r.ID)
	if err != nil {
		return nil, err
	}
	tr := &trialRun{r: r, pr: pr, p: p, prog: prog, iso: iso, floor: floor, events: events, rf: &RunFile{
		ID: r.ID, Index: r.Index, Repetition: r.Repetition, Levels: r.Levels,
		Started: time.Now().UTC().Format(time.RFC3339Nano),
		WarmupS: p.Warmup.Seconds(), DurationS: p.Duration.Seconds(),
		Warnings: []warn.Warning{}, Status: "ok",
	}}
	tr.begin("deploying")
	if tr.t, err = StartPrepared(ctx, pr, iso); err != nil {
		if ctx.Err() != nil {
			w.Abort()
			return nil, ctx.Err()
		}
		tr.fail(oomPrefix(err)+fmt.Sprintf("deploy: %v", err), nil)
		return tr.rf, tr.commit(w)
	}
	defer tr.t.Stop()
	loaded, err := tr.measure(ctx)
	if err != nil {
		if ctx.Err() != nil {
			w.Abort()
			return nil, ctx.Err()
		}
		return nil, err
	}
	if !loaded {
		return tr.rf, tr.commit(w)
	}
	if err := tr.record(w.Dir); err != nil {
		return nil, err
	}
	return tr.rf, tr.commit(w)
}

// begin enters the run into a phase, on the progress line and the stream.
func (tr *trialRun) begin(phase string) {
	tr.prog.begin(tr.r, phase)
	tr.events.Publish(RunState{Run: tr.r.ID, At: time.Now(), State: phase})
}

// commit writes run.json, commits the run and says how it ended.
func (tr *trialRun) commit(w *RunWriter) error {
	if err := commitRun(w, tr.rf); err != nil {
		return err
	}
	tr.events.Publish(RunState{Run: tr.r.ID, At: time.Now(), State: tr.rf.Status, Reason: tr.rf.Reason, File: tr.rf})
	return nil
}

// fail marks the run failed for reason, with the processes' output tails.
func (tr *trialRun) fail(reason string, tails map[string]string) {
	tr.rf.Status, tr.rf.Reason = "failed", reason
	if len(tails) > 0 {
		tr.rf.StderrTail = tails
	}
}

// measure starts the run's recorders, builds the load target and runs
// the load with the faults. A failure of the system under test is the
// run's; loaded is false when it came before the load (the target), and
// an error is only a failure to record or an interruption.
func (tr *trialRun) measure(ctx context.Context) (loaded bool, err error) {
	rctx, stopRecording := context.WithCancel(ctx)
	defer stopRecording()
	tr.gens = newGenerators(tr.iso)
	tr.sent = &callCounter{}
	rec := &Recording{
		Run: tr.r.ID, Deployment: tr.t.Deployment, Prepared: tr.pr, Iso: tr.iso,
		Warmup: tr.p.Warmup, Events: tr.events, File: tr.rf, gens: tr.gens, sent: tr.sent,
	}
	if tr.recs, err = startRecorders(rctx, rec); err != nil {
		return false, err
	}
	tr.telemetry()
	target, err := tr.t.target(tr.pr, tr.sent)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		tr.fail(fmt.Sprintf("load target: %v", err), tails(tr.t.Deployment))
		return false, nil
	}
	if target != nil && target.Close != nil {
		defer target.Close()
	}
	faults := tr.runLoad(target)
	stopRecording()
	rec.ending.Wait()
	if ctx.Err() != nil {
		if tr.res != nil {
			tr.res.Close()
			tr.res = nil
		}
		return false, ctx.Err()
	}
	if tr.res != nil && !tr.res.Started.IsZero() { // nil: several generators failed
		tr.measureStart = tr.res.MeasureStart(tr.p.Warmup) // earlier after a warm-up by calls
	}
	var ferr error
	tr.rf.Faults, ferr = faults.stop(tr.measureStart)
	tr.classify(ferr)
	return true, nil
}

// runLoad runs the load on target (nil: the deployment runs it) in the
// trial's context, which a crash ends, with the faults on their schedule,
// which it returns to be stopped.
func (tr *trialRun) runLoad(target *load.Target) *faultRun {
	cfg := tr.pr.Load
	cfg.Warmup = load.Duration(tr.p.Warmup)
	cfg.Duration = load.Duration(tr.p.Duration)
	tr.begin("warm-up")
	tr.measureStart = time.Now().Add(tr.p.Warmup)
	// Faults are timed from the measurement's start, which a generator in
	// this process reports once its warm-up (by time or by calls) is over;
	// generator processes and pods warm up for load.warmup exactly.
	measuring := make(chan time.Time, 1)
	progress := func(lp load.Progress) {
		tr.prog.update(lp)
		tr.events.Publish(LoadSecond{Run: tr.r.ID, Progress: lp})
	}
	opt := load.Options{Progress: progress, HostTimer: tr.floor, Sentinel: hostclock.SentinelExecutable()}
	inside := tr.t.Deployment.Capabilities().Load
	if inside == nil && cfg.GeneratorCount() == 1 {
		opt.Measuring = func(t time.Time) {
			select {
			case measuring <- t:
			default:
			}
		}
	} else {
		measuring <- tr.measureStart
	}
	faults := tr.t.StartFaults(measuring, tr.p.Duration, func(fw FaultWindow) {
		fw.Run = tr.r.ID
		tr.events.Publish(fw)
	})
	lctx := tr.t.Context()
	if inside != nil {
		tr.res, tr.lerr = inside.RunLoad(lctx, cfg, load.Options{Progress: progress})
	} else {
		tr.res, tr.lerr = tr.gens.runLoad(lctx, tr.pr, tr.t.Deployment, cfg, target, opt)
	}
	return faults
}

// classify fails the run for what went wrong during the load: a process
// that exited first, then the faults' errors, then the load's.
func (tr *trialRun) classify(faultErr error) {
	dep := tr.t.Deployment
	switch crashed := tr.t.Crash(); {
	case crashed != nil:
		tr.fail(oomPrefix(crashed)+crashText(crashed, "the run"), tails(dep))
	case faultErr != nil:
		tr.fail(fmt.Sprintf("faults: %v", faultErr), tails(dep))
	case tr.lerr != nil:
		tr.fail(fmt.Sprintf("load: %v", tr.lerr), tails(dep))
	}
}

// record stops the deployment, judges the load's result and has every
// recorder write its artifact into dir.
func (tr *trialRun) record(dir string) error {
	tr.events.Publish(RunState{Run: tr.r.ID, At: time.Now(), State: "stopping"})
	tr.t.Stop()
	if tr.res != nil {
		defer tr.res.Close()
		tr.prog.measured(tr.res)
	}
	warnings, err := tr.recs.finish(&Ended{Dir: dir, MeasureStart: tr.measureStart, Result: tr.res})
	if err != nil {
		return err
	}
	tr.rf.Warnings = append(tr.rf.Warnings, warnings...)
	if tr.res != nil {
		tr.judge()
	}
	return nil
}

// judge checks the load's result against its thresholds; a run without a
// measured request, or with every one failed, is no measurement.
func (tr *trialRun) judge() {
	res, rf := tr.res, tr.rf
	for _, b := range tr.pr.Load.Thresholds.Check(res.Summary) {
		rf.Thresholds = append(rf.Thresholds, b.String())
	}
	if tot, ok := res.Op("total"); ok && rf.Status == "ok" {
		switch {
		case tot.Count == 0:
			// A run without a single measured request has no latency
			// to analyse: calling it ok would leave an empty cell.
			tr.fail(fmt.Sprintf("no request completed in the %.3g s measurement window: raise load.duration or load.rate", res.Summary.DurationS), tails(tr.t.Deployment))
		case tot.Errors == tot.Count:
			tr.fail(fmt.Sprintf("every one of %d requests failed (%v)", tot.Count, tot.ErrorsByClass), tails(tr.t.Deployment))
		}
	}
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

// telemetry says where the run's telemetry backends can be opened, on the
// progress log and the stream, so that a person can watch them while the
// run goes.
func (tr *trialRun) telemetry() {
	bs := tr.t.Deployment.Capabilities().Telemetry
	if bs == nil {
		return
	}
	urls := map[string]string{}
	for _, b := range bs.TelemetryProcesses() {
		if b.URL != "" {
			urls[strings.TrimPrefix(b.Info.Name, "telemetry.")] = b.URL
		}
	}
	if len(urls) == 0 {
		return
	}
	tr.prog.telemetry(urls)
	tr.events.Publish(Telemetry{Run: tr.r.ID, URLs: urls})
}
