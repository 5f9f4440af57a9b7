package capacity

import (
	"math"

	"github.com/svclab/svclab/internal/load"
)

// File is what `svclab capacity -o FILE` writes (docs/CAPACITY.md). Rate
// is the answer; the knee lies in [Interval.Low, Interval.High).
type File struct {
	// Rate is the highest offered rate, in arrivals per second, that
	// passed (on its first run or its recheck) and held in every
	// confirmation; 0 when none did.
	Rate     float64  `json:"rate"`
	Interval Interval `json:"interval"`
	// StopReason is one of converged, max_rate, min_rate,
	// generator_bottleneck, max_steps; StopDetail says it in words.
	StopReason StopReason       `json:"stop_reason"`
	StopDetail string           `json:"stop_detail"`
	SLOs       *load.Thresholds `json:"slos"`
	Settings   FileSettings     `json:"settings"`
	Steps      []Step           `json:"steps"`
	// Plot is the PNG of latency against offered load, beside this file.
	Plot string `json:"plot,omitempty"`

	Spec      string   `json:"spec"`
	Overrides []string `json:"overrides"`
	Version   string   `json:"svclab_version"`
	Started   string   `json:"started"`
	Ended     string   `json:"ended"`
}

// Interval bounds the knee: Low passed, High failed; High is null when no
// step failed.
type Interval struct {
	Low  float64  `json:"low"`
	High *float64 `json:"high"`
}

// FileSettings are the search's settings and each step's timing.
type FileSettings struct {
	Settings
	StepS     float64 `json:"step_s"`
	WarmupS   float64 `json:"warmup_s"`
	CooldownS float64 `json:"cooldown_s"`
	Arrival   string  `json:"arrival"`
}

// NewFile is the file of an outcome; the caller fills in what the search
// does not know (the spec, the timing, the times).
func NewFile(o *Outcome, slo *load.Thresholds) *File {
	f := &File{Rate: o.Rate, Interval: Interval{Low: o.Rate}, StopReason: o.Stop, StopDetail: o.StopDetail,
		SLOs: slo, Settings: FileSettings{Settings: o.Settings}, Steps: o.Steps}
	if !math.IsInf(o.High, 1) {
		h := o.High
		f.Interval.High = &h
	}
	if f.Steps == nil {
		f.Steps = []Step{}
	}
	return f
}
