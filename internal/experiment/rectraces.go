package experiment

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/warn"
)

// traceRecorder reads the spans of a run with deploy.tracing
// (deploy.Capabilities.Traces) once the deployment has stopped, writes
// the per-hop breakdown as hops.parquet and its check in run.json's
// traces; what the check finds wrong, or a failure to read the spans, is
// a warning.
type traceRecorder struct {
	traces deploy.TraceSource
	ratio  float64
	sent   *callCounter
	file   *RunFile
}

func newTraceRecorder(rec *Recording) Recorder {
	src, ratio := rec.Deployment.Capabilities().Traces, rec.Prepared.Runtime.Mesh.Tracing
	if src == nil || ratio <= 0 {
		return nil
	}
	return &traceRecorder{traces: src, ratio: ratio, sent: rec.sent, file: rec.File}
}

func (*traceRecorder) Start(context.Context, *Recording) error { return nil }

func (r *traceRecorder) Finish(end *Ended) ([]warn.Warning, error) {
	check, err := r.write(end.Dir)
	if err != nil {
		return []warn.Warning{warn.Newf(warn.Traces, "%v", err)}, nil
	}
	r.file.Traces = check
	return check.Problems(), nil
}

// write analyses the spans and writes hops.parquet into dir.
func (r *traceRecorder) write(dir string) (*TraceCheck, error) {
	spans, err := r.traces.Spans()
	if err != nil {
		return nil, err
	}
	check, rows := AnalyzeTraces(spans, r.sent.total(), r.ratio)
	if err := parquet.WriteFile(filepath.Join(dir, TracesFile), rows); err != nil {
		return nil, fmt.Errorf("write %s: %w", TracesFile, err)
	}
	return &check, nil
}
