package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/live"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/spec"
)

// runHeader is `svclab run`'s header for the live view: the plan the
// runner will carry out. It fixes opts.Seed to the plan's, so that a
// random order drawn from the clock is the same in the view and in the
// run. A resumed experiment's plan is drawn from the seed its directory
// recorded: the runner tells it (experiment.Planned), with the runs kept.
func runHeader(ctx context.Context, s *spec.Spec, opts *experiment.Options) live.Experiment {
	e := live.Experiment{Command: "run", Name: s.Experiment.Name}
	if opts.ResumeDir != "" {
		return e
	}
	p, err := experiment.CheckPlan(ctx, s, experiment.ClockSeed(opts.Seed))
	if err != nil {
		return e // the runner reports it
	}
	opts.Seed = p.Seed
	return planHeader(p, 0)
}

// planHeader is the live view's header of plan p, of which kept runs
// were done before.
func planHeader(p *experiment.Plan, kept int) live.Experiment {
	s := p.Spec
	e := live.Experiment{Command: "run", Name: s.Experiment.Name, Kept: kept}
	e.Design = designSize(p)
	e.Order, e.Seed = s.Experiment.Order, p.Seed
	e.Estimate, e.Duration, e.Warmup = p.Estimate(), p.Duration, p.Warmup
	for _, r := range p.Runs {
		levels := map[string]string{}
		for k, v := range r.Levels {
			levels[k] = spec.FormatValue(v)
		}
		e.Runs = append(e.Runs, live.Run{ID: r.ID, Index: r.Index, Levels: levels})
	}
	return e
}

// keptResult is a run committed before a resume, as the runs table shows
// it: its run.json's status, flags and thresholds, and its summary.json's
// total.
func keptResult(dir string) (live.Result, live.Totals, error) {
	var rf experiment.RunFile
	var sum load.Summary
	for name, v := range map[string]any{"run.json": &rf, "summary.json": &sum} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) && name == "summary.json" {
			continue // a run that failed before its load has none
		}
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			return live.Result{}, live.Totals{}, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
	}
	r := live.Result{ID: rf.ID, Status: rf.Status, Reason: rf.Reason, Thresholds: rf.Thresholds}
	for _, w := range rf.Warnings {
		r.Warnings = append(r.Warnings, w.Text)
	}
	var t live.Totals
	for _, o := range sum.Operations {
		if o.Name == "total" {
			r.RPS = o.RPS
			t = live.Totals{Requests: o.Count, Errors: o.Errors, Classes: o.ErrorsByClass,
				Pct: live.Percentiles{P50: o.Latency.P50Ms, P90: o.Latency.P90Ms, P99: o.Latency.P99Ms, Max: o.Latency.MaxMs}}
		}
	}
	return r, t, nil
}

// startRun serves `svclab run`'s view when --ui was given: it subscribes
// to the runner's events (opts.Events) and returns what ends the view
// once Execute has returned err.
func (o *uiOptions) startRun(ctx context.Context, w io.Writer, s *spec.Spec, opts *experiment.Options) (end func(error), err error) {
	if !o.given() {
		return func(error) {}, nil
	}
	header := runHeader(ctx, s, opts)
	v, err := o.start(w, header)
	if err != nil {
		return nil, err
	}
	opts.Events = experiment.NewStream()
	stop := v.follow(opts.Events, header)
	return func(err error) {
		stop()
		v.stop(err)
	}, nil
}

// follow feeds the view from the runner's event stream until the
// returned function is called. The stream calls its subscribers on the
// publishers' goroutines, so events are handed to a goroutine of the
// view's through a buffer, and dropped (counted) should the view ever
// fall that far behind rather than slow the run.
func (v *uiView) follow(events *experiment.Stream, e live.Experiment) (stop func()) {
	if v == nil || v.board == nil {
		return func() {}
	}
	ch := make(chan experiment.Event, 4096)
	var mu sync.Mutex
	closed := false
	unsubscribe := events.Subscribe(func(ev experiment.Event) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case ch <- ev:
		default:
		}
	})
	f := &runFeed{board: v.board, runs: map[string]live.Run{}, duration: e.Duration, rates: cpuRates{}, procs: map[string]live.Process{}}
	for _, r := range e.Runs {
		f.runs[r.ID] = r
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			f.take(ev)
		}
	}()
	return func() {
		unsubscribe()
		mu.Lock()
		closed = true
		close(ch)
		mu.Unlock()
		<-done
	}
}

// runFeed turns a run's events into the board's.
type runFeed struct {
	board    *live.Board
	runs     map[string]live.Run // the plan's, by ID
	duration time.Duration
	index    int
	requests int64 // the current run's measured requests
	rates    cpuRates
	procs    map[string]live.Process
}

func (f *runFeed) take(ev experiment.Event) {
	switch e := ev.(type) {
	case experiment.Planned:
		f.planned(e)
	case experiment.ThresholdStates:
		f.board.Thresholds(thresholdsOf(e.States), e.Final)
	case experiment.HopWindow:
		f.board.Hops(hopsOf(e))
	case experiment.RunState:
		f.state(e)
	case experiment.LoadSecond:
		f.board.Second(secondOf(e.Progress))
		if !e.Progress.Warmup {
			f.requests += e.Progress.Requests
		}
		f.flushResources()
	case experiment.ResourceSample:
		key := fmt.Sprintf("%s/%d", e.Process.Name, e.Process.PID)
		f.procs[e.Process.Name] = live.Process{Role: e.Process.Role, Name: e.Process.Name,
			CPU: f.rates.cores(key, e.At, e.Usage.CPUSeconds), Memory: e.Usage.RSSBytes}
	case experiment.ScaleDecision:
		if e.Desired != e.Current || e.Error != "" {
			why := fmt.Sprintf("%s at %d%% of a %d%% target", e.Metric, e.Utilization, e.Target)
			if e.Reason != "" {
				why += "; " + e.Reason
			}
			if e.Error != "" {
				why = e.Metric + ": " + e.Error
			}
			f.board.Scaled(live.Scale{Group: e.Group, From: e.Current, To: e.Desired, Reason: why})
		}
	case experiment.Telemetry:
		f.board.Links(live.Links{Jaeger: e.URLs["jaeger"], Prometheus: e.URLs["prometheus"]})
	case experiment.FaultWindow:
		f.board.FaultChanged(live.Fault{Kind: e.Kind, Target: e.Target, From: e.From, To: e.To})
	}
}

// planned shows a resumed experiment's plan, and the runs it kept with
// their results; a fresh one's plan came first (runHeader).
func (f *runFeed) planned(e experiment.Planned) {
	if len(e.Kept) == 0 && len(f.runs) > 0 {
		return
	}
	h := planHeader(e.Plan, len(e.Kept))
	for _, r := range h.Runs {
		f.runs[r.ID] = r
	}
	f.duration = h.Duration
	f.board.Experiment(h)
	for _, r := range e.Plan.Runs {
		if !e.Kept[r.ID] {
			continue
		}
		res, tot, err := keptResult(filepath.Join(e.Dir, "runs", r.ID))
		if err != nil {
			res = live.Result{ID: r.ID, Status: "kept", Reason: err.Error()}
		}
		f.board.Kept(res, tot)
	}
}

// hopsOf is a breakdown of the last seconds' traces as the view shows it.
func hopsOf(w experiment.HopWindow) live.Hops {
	h := live.Hops{Window: w.To.Sub(w.From).Seconds(), Traces: w.Traces}
	for _, s := range w.Hops {
		h.Hops = append(h.Hops, live.Hop{Hop: s.Hop, Calls: s.Calls, ServerP50Ms: s.ServerP50Ms, ServerP99Ms: s.ServerP99Ms,
			SelfP50Ms: s.SelfP50Ms, SelfP99Ms: s.SelfP99Ms, WireP50Ms: s.WireP50Ms, Share: s.Share})
	}
	return h
}

func (f *runFeed) state(e experiment.RunState) {
	switch e.State {
	case "deploying":
		r, ok := f.runs[e.Run]
		if !ok {
			f.index++
			r = live.Run{ID: e.Run, Index: f.index}
		}
		f.requests, f.procs = 0, map[string]live.Process{}
		f.board.RunStarted(r)
		f.board.Phase(e.State)
	case "ok", "failed":
		res := live.Result{ID: e.Run, Status: e.State, Reason: e.Reason}
		if e.File != nil {
			for _, w := range e.File.Warnings {
				res.Warnings = append(res.Warnings, w.Text)
			}
			res.Thresholds = e.File.Thresholds
		}
		if f.duration > 0 {
			res.RPS = float64(f.requests) / f.duration.Seconds()
		}
		f.board.RunFinished(res)
	default:
		f.board.Phase(e.State)
	}
}

// flushResources shows the processes' last samples, once a second (with
// the load's second).
func (f *runFeed) flushResources() {
	if len(f.procs) == 0 {
		return
	}
	ps := make([]live.Process, 0, len(f.procs))
	for _, p := range f.procs {
		ps = append(ps, p)
	}
	f.board.Resources(ps)
}
