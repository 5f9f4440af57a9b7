package experiment

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
)

// MetricsFile holds what the run's Prometheus scraped (deploy.metrics).
const MetricsFile = "metrics.parquet"

// MetricRow is one row of metrics.parquet: one sample of one series.
type MetricRow struct {
	// TS is seconds since the measurement started (negative in warm-up).
	TS    float64 `parquet:"t_s"`
	Name  string  `parquet:"name"`
	Group string  `parquet:"group"`
	// Component, Method, Code and Le are the series' labels, empty where
	// it has none: the RED metrics' component and method, an error's gRPC
	// code, a histogram bucket's upper bound.
	Component string  `parquet:"component"`
	Method    string  `parquet:"method"`
	Code      string  `parquet:"code"`
	Le        string  `parquet:"le"`
	Instance  string  `parquet:"instance"`
	Value     float64 `parquet:"value"`
	// Process is the replica scraped (`hop2#1`), as run.json names it.
	Process string `parquet:"process"`
}

// writeMetrics writes the series of a stopped deployment with
// deploy.metrics into dir; nothing without it.
func writeMetrics(dir string, dep deploy.Deployment, on bool, zero time.Time) error {
	src := dep.Capabilities().Metrics
	if src == nil || !on {
		return nil
	}
	samples, err := src.Series()
	if err != nil {
		return err
	}
	rows := make([]MetricRow, 0, len(samples))
	for _, s := range samples {
		rows = append(rows, MetricRow{
			TS: s.T.Sub(zero).Seconds(), Name: s.Name, Group: s.Labels["group"],
			Component: s.Labels["component"], Method: s.Labels["method"], Code: s.Labels["code"],
			Le: s.Labels["le"], Instance: s.Labels["instance"], Value: s.Value, Process: s.Labels["process"],
		})
	}
	if err := parquet.WriteFile(filepath.Join(dir, MetricsFile), rows); err != nil {
		return fmt.Errorf("write %s: %w", MetricsFile, err)
	}
	return nil
}
