package experiment

import (
	"context"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/warn"
)

// A Recorder keeps one per-run artifact, as a k6 output does: it starts
// with the run's load, takes what it records as it comes (from the run's
// Stream, or from the deployment it watches), and once the deployment has
// stopped writes its file into the run's directory.
type Recorder interface {
	// Start begins the record; ctx ends with the measurement, when
	// whatever the recorder samples stops.
	Start(ctx context.Context, rec *Recording) error
	// Finish writes the artifact into the run's directory and returns the
	// warnings it has for run.json; an error is a failure to write it,
	// which fails the experiment as a full disk does.
	Finish(end *Ended) (warnings []warn.Warning, err error)
}

// Recording is a run as its recorders see it when it starts.
type Recording struct {
	// Run is the run's ID, which its events carry.
	Run        string
	Deployment deploy.Deployment
	Prepared   *Prepared
	// Iso is the experiment's isolation (the load generator's limits).
	Iso *Isolation
	// Warmup is how long the load warms up before it measures.
	Warmup time.Duration
	// Events is the run's stream, to subscribe to and publish on.
	Events *Stream
	// File is the run.json being written, for the fields a recorder owns
	// (the processes sampled, the traces' check).
	File *RunFile

	gens *generators // the load's generator processes, which the sampler follows
	sent *callCounter
	// ending holds what a recorder still does as the measurement ends (a
	// sampler's last sample): the runner waits for it before it stops
	// the deployment, whose processes would otherwise be read as they
	// exit.
	ending sync.WaitGroup
}

// Ended is a run as its recorders see it once its deployment has stopped.
type Ended struct {
	// Dir is the run's directory.
	Dir string
	// MeasureStart is when the measurement began: the origin of every
	// artifact's t_s.
	MeasureStart time.Time
	// Result is the load's, nil when it gave none (a failed start of
	// several generators).
	Result *load.Result
}

// recorders are every per-run artifact, in the order they are written
// and their warnings listed: adding one is a file with its Recorder and a
// line here. Each returns nil for a run that does not call for it.
var recorders = []func(*Recording) Recorder{
	newLoadRecorder,     // summary, per-second series and histograms (recload.go)
	newResourceRecorder, // resources.parquet (recresources.go)
	newScalingRecorder,  // scaling.parquet (recscaling.go)
	newTraceRecorder,    // hops.parquet (rectraces.go)
	newMetricRecorder,   // metrics.parquet (recmetrics.go)
}

// recorderSet is the recorders of one run.
type recorderSet []Recorder

// startRecorders chooses and starts the recorders of rec's run.
func startRecorders(ctx context.Context, rec *Recording) (recorderSet, error) {
	var set recorderSet
	for _, newRec := range recorders {
		r := newRec(rec)
		if r == nil {
			continue
		}
		if err := r.Start(ctx, rec); err != nil {
			return nil, err
		}
		set = append(set, r)
	}
	return set, nil
}

// finish finishes every recorder in order and returns their warnings.
func (set recorderSet) finish(end *Ended) ([]warn.Warning, error) {
	var warnings []warn.Warning
	for _, r := range set {
		w, err := r.Finish(end)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, w...)
	}
	return warnings, nil
}
