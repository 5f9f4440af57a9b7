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
	// Isolated says the generator had CPUs of its own
	// (experiment.isolation = "cpuset"), for the advice of a search the
	// generator stopped.
	Isolated bool `json:"-"`

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

// Answer is the result for people: what the rate is (the capacity, or a
// bound on it when the search could not find the knee), why, what would
// find it, and why the search stopped.
func (f *File) Answer() string {
	rate, steps := FormatRate(f.Rate)+"/s", fmt.Sprintf("%d steps", len(f.Steps))
	if len(f.Steps) == 1 {
		steps = "1 step"
	}
	last := "the first step"
	if n := len(f.Steps); n > 0 {
		last = FormatRate(f.Steps[n-1].Rate) + "/s"
	}
	var head string
	switch f.StopReason {
	case GeneratorBottleneck:
		change := "give the load generator more CPU: split the rate over more load.generators, or run it on a machine of its own"
		if f.Isolated {
			change = `give the load generator more CPU: experiment.isolation = "none" (it then shares every CPU with the deployment), or split the rate over more load.generators`
		}
		if f.Rate == 0 {
			head = fmt.Sprintf("capacity: unknown (the generator was the bottleneck at %s before any rate passed; %s)", last, steps)
		} else {
			head = fmt.Sprintf("capacity: ≥ %s (lower bound: the generator was the bottleneck at %s; %s)", rate, last, steps)
		}
		head += "\nto measure beyond it, " + change
	case MaxRate:
		head = fmt.Sprintf("capacity: ≥ %s (lower bound: the highest rate allowed passed; raise --max-rate; %s)", rate, steps)
	case MinRate:
		head = fmt.Sprintf("capacity: below %s (even the lowest rate allowed broke an SLO; lower --min-rate; %s)", last, steps)
	case MaxSteps:
		head = fmt.Sprintf("capacity: between %s and %s/s (the steps ran out before the interval was narrow; raise --max-steps; %s)", rate, FormatRate(f.high()), steps)
	default:
		high := "no step failed"
		if f.Interval.High != nil {
			high = "the lowest failing rate is " + FormatRate(*f.Interval.High) + "/s"
		}
		head = fmt.Sprintf("capacity: %s (%s; %s)", rate, high, steps)
	}
	return fmt.Sprintf("%s\nstop: %s: %s", head, f.StopReason, f.StopDetail)
}

// high is the interval's top, +Inf when no step failed.
func (f *File) high() float64 {
	if f.Interval.High == nil {
		return math.Inf(1)
	}
	return *f.Interval.High
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
		s.Index, s.Phase, FormatRate(s.Rate), s.Latency.P50Ms, s.Latency.P99Ms, 100*s.ErrorRate, s.CompletedRPS, cut, verdict,
		FormatRate(out.Rate), FormatRate(out.High))
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
