package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/live"
	"github.com/svclab/svclab/internal/spec"
)

// runHeader is `svclab run`'s header for the live view: the plan the
// runner will carry out. It fixes opts.Seed to the plan's, so that a
// random order drawn from the clock is the same in the view and in the
// run.
func runHeader(ctx context.Context, s *spec.Spec, opts *experiment.Options) live.Experiment {
	e := live.Experiment{Command: "run", Name: s.Experiment.Name}
	if opts.ResumeDir != "" {
		return e // the runs kept from before are the results directory's
	}
	p, _, err := experiment.PlanSpec(ctx, s, experiment.ClockSeed(opts.Seed))
	if err != nil {
		return e // the runner reports it
	}
	opts.Seed = p.Seed
	d := p.Design
	e.Design = fmt.Sprintf("%s design, %d design points x %d repetitions = %d runs", d.Kind, len(d.Points), s.Experiment.Repetitions, len(p.Runs))
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
