package experiment

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/warn"
)

// metricRecorder writes the series a run with deploy.metrics scraped
// (deploy.Capabilities.Metrics) as metrics.parquet once the deployment
// has stopped; a failure to read them is a warning.
type metricRecorder struct{ metrics deploy.MetricSource }

func newMetricRecorder(rec *Recording) Recorder {
	src := rec.Deployment.Capabilities().Metrics
	if src == nil || !rec.Prepared.Runtime.Mesh.Metrics {
		return nil
	}
	return &metricRecorder{metrics: src}
}

func (*metricRecorder) Start(context.Context, *Recording) error { return nil }

func (r *metricRecorder) Finish(end *Ended) ([]warn.Warning, error) {
	if err := r.write(end); err != nil {
		return []warn.Warning{warn.Newf(warn.Metrics, "%v", err)}, nil
	}
	return nil, nil
}

// write writes the series with times from the measurement's start.
func (r *metricRecorder) write(end *Ended) error {
	samples, err := r.metrics.Series()
	if err != nil {
		return err
	}
	rows := make([]MetricRow, 0, len(samples))
	for _, s := range samples {
		rows = append(rows, MetricRow{
			TS: s.T.Sub(end.MeasureStart).Seconds(), Name: s.Name, Group: s.Labels["group"],
			Component: s.Labels["component"], Method: s.Labels["method"], Code: s.Labels["code"],
			Le: s.Labels["le"], Instance: s.Labels["instance"], Value: s.Value, Process: s.Labels["process"],
		})
	}
	if err := parquet.WriteFile(filepath.Join(end.Dir, MetricsFile), rows); err != nil {
		return fmt.Errorf("write %s: %w", MetricsFile, err)
	}
	return nil
}
