package capacity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/load"
)

// Settings bound a search. Zero values take the defaults below.
type Settings struct {
	// Start is the first rate tried, in arrivals per second.
	Start float64 `json:"start"`
	// Min is the lowest rate tried when even Start fails; below it the
	// search gives up (default Start/1000).
	Min float64 `json:"min"`
	// Max is the highest rate tried (default load.MaxRate).
	Max float64 `json:"max"`
	// Growth multiplies the rate in the bracketing phase (default 2).
	Growth float64 `json:"growth"`
	// Precision ends the binary search once (high-low)/low is at most
	// this (default 0.05).
	Precision float64 `json:"precision"`
	// Confirm is how many times the answer is run again (default 2; a
	// negative value means none).
	Confirm int `json:"confirm"`
	// Retry is how many times a step that failed at its full length is
	// run again before its rate counts as failed (default 1; a negative
	// value means none). One slow outlier decides the p99 of a short
	// step, so a marginal failure is rechecked; a step cut short failed
	// clearly and is not, nor is a confirmation.
	Retry int `json:"retry"`
	// MaxSteps bounds the steps of the whole search (default 40).
	MaxSteps int `json:"max_steps"`
}

// Defaults of Settings.
const (
	DefaultGrowth    = 2.0
	DefaultPrecision = 0.05
	DefaultConfirm   = 2
	DefaultRetry     = 1
	DefaultMaxSteps  = 40
)

// Resolve fills in the zero values and checks the rest; Search calls it,
// and a caller may, to check settings before it deploys anything.
func (s Settings) Resolve() (Settings, error) {
	if s.Max == 0 {
		s.Max = load.MaxRate
	}
	if s.Growth == 0 {
		s.Growth = DefaultGrowth
	}
	if s.Precision == 0 {
		s.Precision = DefaultPrecision
	}
	if s.Confirm == 0 {
		s.Confirm = DefaultConfirm
	}
	if s.Confirm < 0 {
		s.Confirm = 0
	}
	if s.Retry == 0 {
		s.Retry = DefaultRetry
	}
	if s.Retry < 0 {
		s.Retry = 0
	}
	if s.MaxSteps == 0 {
		s.MaxSteps = DefaultMaxSteps
	}
	if s.Min == 0 {
		s.Min = s.Start / 1000
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(s.Start) || s.Start <= 0:
		return s, fmt.Errorf("start: must be a rate > 0, got %v", s.Start)
	case !finite(s.Max) || s.Max < s.Start || s.Max > load.MaxRate:
		return s, fmt.Errorf("max: must be between the start rate (%v) and %d, got %v", s.Start, load.MaxRate, s.Max)
	case !finite(s.Min) || s.Min <= 0 || s.Min > s.Start:
		return s, fmt.Errorf("min: must be > 0 and at most the start rate (%v), got %v", s.Start, s.Min)
	case !finite(s.Growth) || s.Growth <= 1:
		return s, fmt.Errorf("growth: must be > 1, got %v", s.Growth)
	case !finite(s.Precision) || s.Precision <= 0 || s.Precision >= 1:
		return s, fmt.Errorf("precision: must be above 0 and below 1 (a share of the rate), got %v", s.Precision)
	case s.MaxSteps < 2:
		return s, fmt.Errorf("max_steps: must be at least 2, got %d", s.MaxSteps)
	}
	return s, nil
}

// Phase is what a step is for.
type Phase string

// The phases of a search.
const (
	Bracket Phase = "bracket" // growing (or, after a first failure, shrinking) the rate
	Bisect  Phase = "bisect"  // halving the interval
	Confirm Phase = "confirm" // repeating the answer
	Recheck Phase = "recheck" // repeating a step that failed at its full length
)

// Measurement is what one step measured, as the StepFunc returns it.
type Measurement struct {
	Summary   load.Summary
	Generator load.Generator
	// CutShort says why the step was stopped before its end (a Cutter's
	// reason); empty when it ran its full length.
	CutShort string
}

// StepFunc runs one step at rate arrivals per second. An error ends the
// search (a crashed deployment, an interruption); a step that merely
// breaks an SLO is a Measurement.
type StepFunc func(ctx context.Context, rate float64) (Measurement, error)

// Step is one step of a search and its verdict.
type Step struct {
	Index int     `json:"index"`
	Phase Phase   `json:"phase"`
	Rate  float64 `json:"rate"`
	Pass  bool    `json:"pass"`
	// Breaches are the SLOs broken, as load.Breach prints them, and the
	// other reasons the step failed (dropped arrivals, no answers).
	Breaches []string `json:"breaches,omitempty"`
	CutShort string   `json:"cut_short,omitempty"`
	// Generator is the generator audit's reason when it flagged the
	// generator as a bottleneck during the step.
	Generator string `json:"generator_bottleneck,omitempty"`
	// Inconclusive says why a flagged step's verdict may be the
	// generator's doing; the search stops at such a step.
	Inconclusive string  `json:"inconclusive,omitempty"`
	DurationS    float64 `json:"duration_s"`
	// SentRPS and CompletedRPS are the arrivals sent and the answers
	// that came within the window, per second.
	SentRPS      float64    `json:"sent_rps"`
	CompletedRPS float64    `json:"completed_rps"`
	Requests     int64      `json:"requests"`
	Errors       int64      `json:"errors"`
	ErrorRate    float64    `json:"error_rate"`
	Dropped      int64      `json:"dropped"`
	Latency      load.Stats `json:"latency"`
	// Elapsed is the step's wall time, warm-up included.
	Elapsed time.Duration `json:"-"`
}

// StopReason says why a search ended.
type StopReason string

// The reasons a search ends.
const (
	// Converged: the interval is within the precision and the answer
	// held in every confirmation run.
	Converged StopReason = "converged"
	// MaxRate: the highest rate allowed passed; the capacity is at least
	// that.
	MaxRate StopReason = "max_rate"
	// MinRate: even the lowest rate allowed broke an SLO.
	MinRate StopReason = "min_rate"
	// GeneratorBottleneck: the load generator could not offer the rate;
	// the answer is a lower bound.
	GeneratorBottleneck StopReason = "generator_bottleneck"
	// MaxSteps: the step budget ran out before the interval was narrow.
	MaxSteps StopReason = "max_steps"
)

// Outcome is a search's answer: the highest rate that passed and held in
// every confirmation (Rate, 0 when none did) and the lowest rate that
// failed (High, +Inf when none did). The knee lies in [Rate, High).
type Outcome struct {
	Rate       float64
	High       float64
	Stop       StopReason
	StopDetail string
	Steps      []Step
	Settings   Settings
}

// Search finds the highest rate that passes slo. It starts at
// settings.Start and multiplies the rate by Growth while steps pass (or
// divides it while the first ones fail), then halves the interval between
// the highest passing and the lowest failing rate until it is within
// Precision, then runs the answer Confirm more times; a failed
// confirmation makes the answer the interval's new top and the search
// goes on below it. A rate fails only when its step and its Retry
// rechecks all fail (a step cut short fails at once). report, when not
// nil, is called after every step.
//
// It stops early at a step whose generator audit flags the generator as
// the bottleneck when the flag could have decided the step's verdict (see
// judge): such a step says nothing of the deployment.
// An error from step ends the search and is returned with the outcome so
// far.
func Search(ctx context.Context, settings Settings, slo *load.Thresholds, step StepFunc, report func(Step, *Outcome)) (*Outcome, error) {
	s, err := settings.Resolve()
	if err != nil {
		return nil, err
	}
	// Every limit a Thresholds holds is broken by a summary with no
	// operations, so an empty check says there is nothing to search for.
	if len(slo.Check(load.Summary{})) == 0 {
		return nil, errors.New("capacity: no SLO to search against")
	}
	out := &Outcome{High: math.Inf(1), Settings: s}
	passed := []float64{} // every rate that passed, ascending
	errStop := errors.New("stop")

	run := func(phase Phase, rate float64) (bool, error) {
		for try := 0; ; try++ {
			if len(out.Steps) >= s.MaxSteps {
				out.Stop = MaxSteps
				out.StopDetail = fmt.Sprintf("%d steps run; the knee lies between %s and %s", len(out.Steps), FormatRate(out.Rate), FormatRate(out.High))
				return false, errStop
			}
			start := time.Now()
			m, err := step(ctx, rate)
			if err != nil {
				return false, fmt.Errorf("step %d at %s/s: %w", len(out.Steps)+1, FormatRate(rate), err)
			}
			st := judge(m, slo, rate)
			st.Index, st.Phase, st.Rate, st.Elapsed = len(out.Steps)+1, phase, rate, time.Since(start)
			if try > 0 {
				st.Phase = Recheck
			}
			retry := !st.Pass && st.Inconclusive == "" && st.CutShort == "" && phase != Confirm && try < s.Retry
			switch {
			case st.Inconclusive != "":
				out.Stop = GeneratorBottleneck
				out.StopDetail = fmt.Sprintf("at %s/s the load generator was the bottleneck (%s) and %s, so the step says nothing of the deployment; the answer is a lower bound", FormatRate(rate), st.Generator, st.Inconclusive)
			case st.Pass:
				out.Rate = max(out.Rate, rate)
				if i, found := slices.BinarySearch(passed, rate); !found {
					passed = slices.Insert(passed, i, rate)
				}
			case !retry:
				out.High = min(out.High, rate)
			}
			out.Steps = append(out.Steps, st)
			if report != nil {
				report(st, out)
			}
			if st.Inconclusive != "" {
				return false, errStop
			}
			if !retry {
				return st.Pass, nil
			}
		}
	}

	if err := searchPhases(s, out, &passed, run); err != nil && !errors.Is(err, errStop) {
		return out, err
	}
	return out, nil
}

// searchPhases brackets, bisects and confirms, calling run for each step;
// it returns run's error (errStop for a reasoned stop) or nil once out
// holds the answer and its stop reason.
func searchPhases(s Settings, out *Outcome, passed *[]float64, run func(Phase, float64) (bool, error)) error {
	// Bracket: up while steps pass, down while they fail.
	rate := s.Start
	ok, err := run(Bracket, rate)
	if err != nil {
		return err
	}
	for ok {
		if rate >= s.Max {
			out.Stop = MaxRate
			out.StopDetail = fmt.Sprintf("%s/s, the highest rate allowed, passed; the capacity is at least that", FormatRate(s.Max))
			return nil
		}
		rate = min(rate*s.Growth, s.Max)
		if ok, err = run(Bracket, rate); err != nil {
			return err
		}
	}
	// down divides the rate from a failing one until a step passes; it
	// reports whether one did.
	down := func(rate float64) (bool, error) {
		for out.Rate == 0 {
			if rate <= s.Min {
				out.Stop = MinRate
				out.StopDetail = fmt.Sprintf("even %s/s, the lowest rate allowed, broke an SLO", FormatRate(rate))
				return false, nil
			}
			rate = max(rate/s.Growth, s.Min)
			if _, err := run(Bracket, rate); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	if ok, err := down(rate); !ok {
		return err
	}
	for {
		// Bisect between the highest pass and the lowest failure.
		for (out.High-out.Rate)/out.Rate > s.Precision {
			if _, err := run(Bisect, midpoint(out.Rate, out.High, s.Precision)); err != nil {
				return err
			}
		}
		// Confirm: the answer must hold again; if it does not, it is
		// the new top and the search goes on below it.
		held := true
		for i := 0; i < s.Confirm && held; i++ {
			if held, err = run(Confirm, out.Rate); err != nil {
				return err
			}
		}
		if held {
			out.Stop = Converged
			out.StopDetail = fmt.Sprintf("%s/s held in %d more run(s); the knee lies below %s/s", FormatRate(out.Rate), s.Confirm, FormatRate(out.High))
			return nil
		}
		// The failed rate leaves the passes; the next lower one is the
		// answer now, or the bracket goes down from it.
		*passed = slices.DeleteFunc(*passed, func(r float64) bool { return r >= out.High })
		if len(*passed) > 0 {
			out.Rate = (*passed)[len(*passed)-1]
			continue
		}
		out.Rate = 0
		if ok, err := down(out.High); !ok {
			return err
		}
	}
}

// midpoint is the middle of [lo, hi), rounded to the fewest significant
// digits that still resolve the precision (four for 5%), so that rates
// read as people write them: 78.75/s, not 78.7512/s.
func midpoint(lo, hi, precision float64) float64 {
	mid := (lo + hi) / 2
	digits := int(math.Ceil(-math.Log10(precision))) + 2
	scale := math.Pow(10, float64(digits)-math.Ceil(math.Log10(mid)))
	if r := math.Round(mid*scale) / scale; r > lo && r < hi {
		return r
	}
	return mid
}

// judge turns a step's measurement into a verdict: it passes when it
// breaks no SLO, dropped no arrival, and had answers at all.
//
// A step whose generator audit flags the generator is judged only where
// the flag cannot change the verdict. Latency runs from the intended send
// time, so the generator's lateness only adds to it: a pass stands, as
// long as the generator sent the rate asked for. A latency breach stands
// when it exceeds its limit by more than the generator's largest send lag,
// since no answer's latency owes more than that to the generator; errors,
// drops and a step with no answers are the deployment's. Anything else is
// inconclusive, and the search stops there.
func judge(m Measurement, slo *load.Thresholds, rate float64) Step {
	if m.CutShort != "" {
		m.Summary = withoutCanceled(m.Summary)
	}
	st := Step{CutShort: m.CutShort, DurationS: m.Summary.DurationS, Dropped: m.Summary.Dropped}
	for _, o := range m.Summary.Operations {
		if o.Name == "total" {
			st.SentRPS, st.CompletedRPS, st.Requests, st.Errors, st.Latency = o.RPS, o.CompletedRPS, o.Count, o.Errors, o.Latency
			if o.Count > 0 {
				st.ErrorRate = float64(o.Errors) / float64(o.Count)
			}
		}
	}
	standing := 0 // breaches the generator cannot account for
	for _, b := range slo.Check(m.Summary) {
		st.Breaches = append(st.Breaches, b.String())
		if strings.HasSuffix(b.Metric, "_ms") && b.Value-b.Limit > m.Generator.LagMaxMs || b.Metric == "error_rate" {
			standing++
		}
	}
	if m.Summary.Dropped > 0 {
		st.Breaches = append(st.Breaches, fmt.Sprintf("%d arrivals dropped: more requests were outstanding than load.max_inflight allows", m.Summary.Dropped))
		standing++
	}
	if st.Requests == 0 {
		st.Breaches = append(st.Breaches, "no request was answered")
		standing++
	}
	if m.CutShort != "" && len(st.Breaches) == 0 {
		// The cut was decided on figures the partial summary may no
		// longer show (the slow answers still in flight, say).
		st.Breaches = append(st.Breaches, m.CutShort)
	}
	st.Pass = len(st.Breaches) == 0
	if m.Generator.Bottleneck {
		st.Generator = m.Generator.Reason
		// A step cut short sent for less than its length; its rate is
		// judged by the share of its planned length it ran.
		shortfall := m.CutShort == "" && st.SentRPS < sentEnough*rate
		switch {
		case st.Pass && shortfall:
			st.Inconclusive = fmt.Sprintf("the generator sent %.1f/s of the %s/s asked for", st.SentRPS, FormatRate(rate))
		case !st.Pass && standing == 0:
			st.Inconclusive = fmt.Sprintf("the SLO breaches are within the generator's largest send lag (%.1f ms)", m.Generator.LagMaxMs)
		}
	}
	return st
}

// withoutCanceled leaves out of a summary the requests that failed as
// "canceled": those a cut step's end canceled, which are the search's
// doing, not the deployment's.
func withoutCanceled(s load.Summary) load.Summary {
	s.Operations = slices.Clone(s.Operations)
	for i, o := range s.Operations {
		n := o.ErrorsByClass["canceled"]
		if n == 0 {
			continue
		}
		o.Count, o.Errors = o.Count-n, o.Errors-n
		o.ErrorsByClass = maps.Clone(o.ErrorsByClass)
		delete(o.ErrorsByClass, "canceled")
		s.Operations[i] = o
	}
	return s
}

// sentEnough is the share of the asked rate a flagged generator must have
// sent for its step to count.
const sentEnough = 0.95

// FormatRate writes a rate for people: no more digits than matter.
// FormatRate prints a rate rounded as people read one: whole from 100/s,
// three significant figures below (a bracket's 187.3125/s is 187/s,
// 8.4375/s is 8.44/s). At the default precision (5%) a search's steps
// differ by far more than that; the JSON keeps every rate exact.
func FormatRate(r float64) string {
	if math.IsInf(r, 1) {
		return "∞"
	}
	if r == 0 || math.Abs(r) >= 100 {
		return strconv.FormatFloat(math.Round(r), 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}
