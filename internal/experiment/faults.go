package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// FaultRecord is one window of a fault of [deploy.faults] as it happened,
// in run.json's "faults": seconds from the start of the measurement, as
// timeseries.parquet counts them.
type FaultRecord struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// FromS and ToS are when the fault acted (equal for a kill).
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	// Process names the process a kill ended.
	Process string `json:"process,omitempty"`
	// Error says why the fault could not be injected or removed.
	Error string `json:"error,omitempty"`
}

// faultRun injects a run's faults on their schedule.
type faultRun struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	records []faultEvent
	// ended, when set, is told of each window as it ends.
	ended func(FaultWindow)
}

// faultEvent is a window with its wall-clock times.
type faultEvent struct {
	kind, target, process string
	from, to              time.Time
	err                   error
}

// startFaults injects faults in the measurement that starts at the time
// start delivers and lasts d: each fault in a goroutine of its own that
// walks its windows, so one fault's windows never overlap and different
// faults may. The start comes over a channel because a warm-up by calls
// ends when its calls are done, which no one knows in advance.
func startFaults(ctx context.Context, dep deploy.Deployment, faults []runtime.Fault, start <-chan time.Time, d time.Duration, ended func(FaultWindow)) *faultRun {
	ctx, cancel := context.WithCancel(ctx)
	fr := &faultRun{cancel: cancel, ended: ended}
	if len(faults) == 0 {
		return fr
	}
	// One goroutine waits for the start, then each fault walks its windows
	// in a goroutine of its own; wg counts the waiter until it has added them.
	fr.wg.Add(1)
	go func() {
		defer fr.wg.Done()
		var begin time.Time
		select {
		case begin = <-start:
		case <-ctx.Done():
			return
		}
		for _, f := range faults {
			fr.wg.Add(1)
			go func() {
				defer fr.wg.Done()
				fr.walk(ctx, dep, f, begin, d)
			}()
		}
	}()
	return fr
}

// walk injects f's windows in a measurement that began at start.
func (fr *faultRun) walk(ctx context.Context, dep deploy.Deployment, f runtime.Fault, start time.Time, d time.Duration) {
	for _, w := range f.Windows(d) {
		if !sleepUntil(ctx, start.Add(w.From)) {
			return
		}
		fr.inject(ctx, dep, f, start.Add(w.To))
	}
}

// inject applies f now and removes it at until (or when ctx ends).
func (fr *faultRun) inject(ctx context.Context, dep deploy.Deployment, f runtime.Fault, until time.Time) {
	ev := faultEvent{kind: f.Kind, target: f.Target, from: time.Now()}
	defer func() {
		fr.mu.Lock()
		fr.records = append(fr.records, ev)
		fr.mu.Unlock()
		if fr.ended != nil {
			fr.ended(FaultWindow{Kind: ev.kind, Target: ev.target, Process: ev.process, From: ev.from, To: ev.to, Err: ev.err})
		}
	}()
	if f.Kind == spec.FaultKill {
		k := dep.Capabilities().Killer
		if k == nil {
			ev.to, ev.err = ev.from, errors.New("this deployer cannot kill a process")
			return
		}
		info, err := k.Kill(f.Group, f.Replica)
		ev.to, ev.process, ev.err = ev.from, info.Name, err
		return
	}
	hf := dep.Capabilities().HopFaults
	if hf == nil {
		ev.to, ev.err = ev.from, errors.New("this deployer cannot fault a hop")
		return
	}
	stop, err := hf.StartFault(f)
	if err != nil {
		ev.to, ev.err = ev.from, err
		return
	}
	sleepUntil(ctx, until)
	ev.err = stop()
	ev.to = time.Now()
}

// stop ends the faults still acting and returns what happened, in seconds
// from measureStart, in the order the windows began.
func (fr *faultRun) stop(measureStart time.Time) ([]FaultRecord, error) {
	fr.cancel()
	fr.wg.Wait()
	fr.mu.Lock()
	defer fr.mu.Unlock()
	out := make([]FaultRecord, 0, len(fr.records))
	var errs []error
	for _, ev := range fr.records {
		r := FaultRecord{Kind: ev.kind, Target: ev.target, Process: ev.process,
			FromS: ev.from.Sub(measureStart).Seconds(), ToS: ev.to.Sub(measureStart).Seconds()}
		if ev.err != nil {
			r.Error = ev.err.Error()
			errs = append(errs, fmt.Errorf("deploy.faults.%s on %s: %w", ev.kind, ev.target, ev.err))
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b FaultRecord) int { return cmp.Compare(a.FromS, b.FromS) })
	return out, errors.Join(errs...)
}

// sleepUntil waits for t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
