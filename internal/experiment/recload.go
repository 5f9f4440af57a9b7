package experiment

import (
	"context"

	"github.com/svclab/svclab/internal/warn"
)

// loadRecorder writes the load's own result into the run's directory:
// its summary, its per-second series (timeseries.parquet) and its
// histograms (load.Result.WriteDir), and in run.json the generator's
// self-audit, the warm-up by calls and the load's warnings. Its seconds
// reach the stream as LoadSecond while it runs (runone.go).
type loadRecorder struct{ file *RunFile }

func newLoadRecorder(rec *Recording) Recorder { return &loadRecorder{file: rec.File} }

func (*loadRecorder) Start(ctx context.Context, rec *Recording) error { return nil }

func (r *loadRecorder) Finish(end *Ended) ([]warn.Warning, error) {
	res := end.Result
	if res == nil {
		return nil, nil
	}
	if err := res.WriteDir(end.Dir); err != nil {
		return nil, err
	}
	r.file.Generator = res.Generator
	r.file.Warmup = res.Warmup
	return res.Warnings, nil
}
