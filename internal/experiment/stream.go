package experiment

import (
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
)

// Event is one thing that happens in a run while it goes, as its
// recorders and any other watcher (a live view) see it on the run's
// Stream: a RunState, a Telemetry, a LoadSecond, a ResourceSample, a
// ScaleDecision, a FaultWindow, a ThresholdStates or a HopWindow. Each
// names its run, but Planned, which is the experiment's.
type Event interface{ RunID() string }

// Planned is the plan the runner is about to carry out, published once
// before its first run: with --resume, Kept are the runs committed before
// (in Dir), which it does not run again.
type Planned struct {
	Plan *Plan
	Dir  string
	Kept map[string]bool
}

// RunState is a run entering a state: "deploying", "warm-up" (the load
// starts), "stopping" (the load is over), then its status, "ok" or
// "failed" (with the reason), once committed.
type RunState struct {
	Run    string
	At     time.Time
	State  string
	Reason string
	// File is the run's run.json as committed, with the final state
	// (its warnings and broken thresholds); nil before.
	File *RunFile
}

// LoadSecond is the load generator's report of its last second.
type LoadSecond struct {
	Run      string
	Progress load.Progress
}

// ResourceSample is one reading of one process's counters, at the time it
// was measured (the rows of resources.parquet).
type ResourceSample struct {
	Run     string
	At      time.Time
	Process deploy.ProcessInfo
	Usage   deploy.Usage
}

// ScaleDecision is one metric of one autoscaler decision (the rows of
// scaling.parquet).
type ScaleDecision struct {
	Run string
	deploy.ScaleEvent
}

// FaultWindow is a window of a fault of [deploy.faults] that has ended
// (run.json's faults), in wall-clock time.
type FaultWindow struct {
	Run                   string
	Kind, Target, Process string
	From, To              time.Time
	Err                   error
}

// Telemetry is where a run's telemetry backends can be opened while it
// goes (deploy.tracing's Jaeger, deploy.metrics' Prometheus): URLs by
// backend name, "jaeger" and "prometheus".
type Telemetry struct {
	Run  string
	URLs map[string]string
}

// ThresholdStates is how the run's [load.thresholds] stand: judged on
// the measurement so far after each measured second (Final false), then
// on the load's result (Final true), by load.Thresholds.States, whose
// broken ones are run.json's thresholds.
type ThresholdStates struct {
	Run    string
	States []load.ThresholdState
	Final  bool
}

// HopWindow is the per-hop breakdown of a run with deploy.tracing over
// its last seconds of traces (From to To), read from its Jaeger while
// the load runs.
type HopWindow struct {
	Run      string
	From, To time.Time
	// Traces are the traces the window holds; Hops their breakdown.
	Traces int
	Hops   []HopStat
}

func (Planned) RunID() string           { return "" }
func (e ThresholdStates) RunID() string { return e.Run }
func (e HopWindow) RunID() string       { return e.Run }
func (e Telemetry) RunID() string       { return e.Run }
func (e RunState) RunID() string        { return e.Run }
func (e LoadSecond) RunID() string      { return e.Run }
func (e ResourceSample) RunID() string  { return e.Run }
func (e ScaleDecision) RunID() string   { return e.Run }
func (e FaultWindow) RunID() string     { return e.Run }

// Stream fans a run's events out to every subscriber as they happen, in
// the order each source publishes them. A subscriber runs on the
// publisher's goroutine, and the sources (the load generator, the
// sampler, the autoscalers' watch, the faults) publish from goroutines of
// their own, so it must be safe for concurrent calls and must not block:
// a live view hands each event to a buffered channel of its own. A nil *Stream drops every
// event, so that a source publishes without asking whether anyone
// listens.
type Stream struct {
	mu   sync.RWMutex
	next int
	subs map[int]func(Event)
}

// NewStream is a stream without subscribers.
func NewStream() *Stream { return &Stream{subs: map[int]func(Event){}} }

// Subscribe calls f with every event published from now until the
// returned function is called.
func (s *Stream) Subscribe(f func(Event)) (unsubscribe func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.next
	s.next++
	s.subs[id] = f
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

// Publish hands e to every subscriber. The subscribers are called
// outside the stream's lock, so that one may publish in turn (the load
// recorder judges each second's thresholds as it comes); one that has
// just unsubscribed may still get an event published meanwhile.
func (s *Stream) Publish(e Event) {
	if s == nil {
		return
	}
	s.mu.RLock()
	subs := make([]func(Event), 0, len(s.subs))
	for _, f := range s.subs {
		subs = append(subs, f)
	}
	s.mu.RUnlock()
	for _, f := range subs {
		f(e)
	}
}
