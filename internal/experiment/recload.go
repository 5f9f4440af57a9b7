package experiment

import (
	"context"
	"slices"
	"sync"

	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/warn"
)

// loadRecorder writes the load's own result into the run's directory:
// its summary, its per-second series (timeseries.parquet) and its
// histograms (load.Result.WriteDir), and in run.json the generator's
// self-audit, the warm-up by calls and the load's warnings. Its seconds
// reach the stream as LoadSecond while it runs (runone.go); with
// [load.thresholds], it judges them on the measurement so far after each
// second, and on the result at the end, and publishes their states
// (ThresholdStates).
type loadRecorder struct {
	file   *RunFile
	run    string
	events *Stream
	th     *load.Thresholds

	mu          sync.Mutex
	tally       *load.Tally
	last        []load.ThresholdState
	unsubscribe func()
}

func newLoadRecorder(rec *Recording) Recorder {
	return &loadRecorder{file: rec.File, run: rec.Run, events: rec.Events, th: rec.Prepared.Load.Thresholds}
}

func (r *loadRecorder) Start(ctx context.Context, rec *Recording) error {
	if r.th == nil || r.events == nil {
		return nil
	}
	r.tally = load.NewTally()
	r.publish(r.th.States(load.Summary{}, false), false) // pending until the first measured second
	r.unsubscribe = r.events.Subscribe(func(e Event) {
		if s, ok := e.(LoadSecond); ok && s.Run == r.run && !s.Progress.Warmup {
			r.mu.Lock()
			r.tally.Add(s.Progress)
			sum := r.tally.Summary()
			r.mu.Unlock()
			r.publish(r.th.States(sum, false), false)
		}
	})
	return nil
}

// publish puts the thresholds' states on the stream when they changed,
// and always the final ones.
func (r *loadRecorder) publish(states []load.ThresholdState, final bool) {
	r.mu.Lock()
	changed := final || !slices.Equal(states, r.last)
	r.last = states
	r.mu.Unlock()
	if changed {
		r.events.Publish(ThresholdStates{Run: r.run, States: states, Final: final})
	}
}

func (r *loadRecorder) Finish(end *Ended) ([]warn.Warning, error) {
	if r.unsubscribe != nil {
		r.unsubscribe()
	}
	res := end.Result
	if res == nil {
		return nil, nil
	}
	if err := res.WriteDir(end.Dir); err != nil {
		return nil, err
	}
	r.file.Generator = res.Generator
	r.file.Warmup = res.Warmup
	if r.unsubscribe != nil {
		// The run's verdict (trialRun.judge) is Check on this same summary.
		r.publish(r.th.States(res.Summary, true), true)
	}
	return res.Warnings, nil
}
