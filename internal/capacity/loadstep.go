package capacity

import (
	"context"
	"sync"

	"github.com/svclab/svclab/internal/load"
)

// LoadStep is the StepFunc that drives target with the load generator:
// base with the step's rate, cut short once a Cutter says the step has
// failed. progress, when not nil, sees each second of the step. base is
// an open-loop constant-rate configuration whose duration and warm-up
// are a step's. audit holds what each step's generator audit is judged
// against (Options.HostTimer, the host timer's calibration, and
// Options.Sentinel, the binary run as the timer loop beside each step),
// so a step is not called a generator bottleneck for lateness the host
// imposes on any program; its Progress is the step's own.
func LoadStep(base load.Config, target *load.Target, slo *load.Thresholds, audit load.Options, progress func(rate float64, p load.Progress)) StepFunc {
	return func(ctx context.Context, rate float64) (Measurement, error) {
		cfg := base
		cfg.Rate = rate
		stepCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		cutter := NewCutter(slo, rate*cfg.Duration.D().Seconds())
		var (
			mu  sync.Mutex
			cut string
		)
		opt := audit
		opt.Progress = func(p load.Progress) {
			if progress != nil {
				progress(rate, p)
			}
			mu.Lock()
			defer mu.Unlock()
			if cut == "" {
				if cut = cutter.Observe(p); cut != "" {
					cancel()
				}
			}
		}
		res, err := load.Run(stepCtx, cfg, target, opt)
		mu.Lock()
		reason := cut
		mu.Unlock()
		if ctx.Err() != nil {
			if res != nil {
				res.Close()
			}
			return Measurement{}, context.Cause(ctx)
		}
		if res == nil {
			return Measurement{}, err
		}
		defer res.Close()
		if err != nil && reason == "" {
			return Measurement{}, err
		}
		return Measurement{Summary: res.Summary, Generator: res.Generator, CutShort: reason}, nil
	}
}
