package capacity

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

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

// Answer is the result for people: the rate, the interval's top, and why
// the search stopped.
func (f *File) Answer() string {
	high := "no step failed"
	if f.Interval.High != nil {
		high = "the lowest failing rate is " + fmtRate(*f.Interval.High) + "/s"
	}
	return fmt.Sprintf("capacity: %s/s (%s; %d steps)\nstop: %s: %s", fmtRate(f.Rate), high, len(f.Steps), f.StopReason, f.StopDetail)
}

// Line is the progress line of a step: its phase and rate, what it
// measured, whether it was cut short, its verdict, and the interval so far.
func (s Step) Line(out *Outcome) string {
	verdict := "pass"
	switch {
	case s.Inconclusive != "":
		verdict = "INCONCLUSIVE: generator bottleneck (" + s.Generator + ") and " + s.Inconclusive
	case !s.Pass:
		verdict = "FAIL: " + strings.Join(s.Breaches, "; ")
	}
	if s.Generator != "" && s.Inconclusive == "" {
		verdict += " (generator flagged, verdict stands: " + s.Generator + ")"
	}
	cut := ""
	if s.CutShort != "" {
		cut = fmt.Sprintf(" (cut after %.1f s)", s.DurationS)
	}
	return fmt.Sprintf("step %2d %-7s %8s/s  p50 %7.2f ms  p99 %8.2f ms  err %5.2f%%  done %8.1f/s%s  %s  | [%s, %s)",
		s.Index, s.Phase, fmtRate(s.Rate), s.Latency.P50Ms, s.Latency.P99Ms, 100*s.ErrorRate, s.CompletedRPS, cut, verdict,
		fmtRate(out.Rate), fmtRate(out.High))
}

// DescribeSLOs writes the SLOs on all requests as "p99_ms <= 50, ...",
// then names the operations that have their own.
func DescribeSLOs(t *load.Thresholds) string {
	if t == nil {
		return "none"
	}
	var parts []string
	for _, l := range limitsSet(t.Limits) {
		op := "<="
		if l.key == "min_rps" {
			op = ">="
		}
		parts = append(parts, fmt.Sprintf("%s %s %g", l.key, op, l.v))
	}
	for _, name := range slices.Sorted(maps.Keys(t.Operations)) {
		parts = append(parts, fmt.Sprintf("thresholds of %q", name))
	}
	return strings.Join(parts, ", ")
}

// limit is one limit of a load.Limits that is set.
type limit struct {
	key string
	v   float64
}

// limitsSet lists the limits l sets, by their [load.thresholds] keys, in
// the order load.Limits declares them.
func limitsSet(l load.Limits) []limit {
	var out []limit
	v := reflect.ValueOf(l)
	for i, key := range SLOKeys() {
		if p, ok := v.Field(i).Interface().(*float64); ok && p != nil {
			out = append(out, limit{key, *p})
		}
	}
	return out
}

// SLOKeys are the keys an SLO may name: those of load.Limits, the
// thresholds of [load.thresholds], read from its fields so that a limit
// added there is an SLO here.
func SLOKeys() []string {
	t := reflect.TypeFor[load.Limits]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("toml"), ",")
	}
	return keys
}
