package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/warn"
)

// ScalingFile holds the autoscalers' decisions of a run.
const ScalingFile = "scaling.parquet"

// scalingRecorder keeps the decisions of a deployment's autoscalers
// ([deploy.autoscale], deploy.Capabilities.Scaling): each goes to the
// stream as a ScaleDecision within a second of being made, and all of
// them to scaling.parquet once the deployment has stopped.
type scalingRecorder struct {
	scaling deploy.Autoscaled
	seen    int // the decisions published so far
}

func newScalingRecorder(rec *Recording) Recorder {
	as := rec.Deployment.Capabilities().Scaling
	if as == nil || !autoscaled(rec.Deployment) {
		return nil
	}
	return &scalingRecorder{scaling: as}
}

func (r *scalingRecorder) Start(ctx context.Context, rec *Recording) error {
	go every(ctx, time.Second, func(time.Time) { r.publish(rec) })
	return nil
}

// publish puts the decisions made since the last call on the stream.
func (r *scalingRecorder) publish(rec *Recording) {
	events := r.scaling.ScaleEvents()
	for _, e := range events[min(r.seen, len(events)):] {
		rec.Events.Publish(ScaleDecision{Run: rec.Run, ScaleEvent: e})
	}
	r.seen = len(events)
}

func (r *scalingRecorder) Finish(end *Ended) ([]warn.Warning, error) {
	rows := []ScalingRow{}
	for _, e := range r.scaling.ScaleEvents() {
		rows = append(rows, ScalingRow{
			TS: e.Time.Sub(end.MeasureStart).Seconds(), Group: e.Group, Metric: e.Metric,
			UtilizationPct: int64(e.Utilization), TargetPct: int64(e.Target),
			Current: int64(e.Current), Proposed: int64(e.Proposed), Desired: int64(e.Desired),
			Reason: e.Reason, Error: e.Error,
		})
	}
	path := filepath.Join(end.Dir, ScalingFile)
	if err := parquet.WriteFile(path, rows); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return nil, nil
}

// every calls f now and then every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(now time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	f(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f(now)
		}
	}
}
