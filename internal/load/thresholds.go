package load

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

// Thresholds are pass/fail criteria checked once a run is over, as k6's
// thresholds are, so that a script or CI job can gate on a run:
//
//	[load.thresholds]                    # all requests together ("total")
//	p99_ms = 50
//	error_rate = 0.01
//	abort_on_fail = true
//	[load.thresholds.operations."GET /cart"]
//	p99_ms = 20
type Thresholds struct {
	Limits
	// AbortOnFail stops an experiment at the first run that breaks a
	// threshold, as k6's abortOnFail stops a test. svclab load checks
	// thresholds once, at the end, whatever it says.
	AbortOnFail bool `toml:"abort_on_fail,omitempty" json:"abort_on_fail,omitempty"`
	// Operations bound single operations, by their name in the results.
	Operations map[string]Limits `toml:"operations,omitempty" json:"operations,omitempty"`
}

// Limits bound one operation's figures. A limit left out is not checked.
// Latency limits are upper bounds in milliseconds on the summary's
// latency (from the intended send); error_rate is the share of failed
// requests, 0 to 1; min_rps is a lower bound on completions per second.
type Limits struct {
	P50Ms     *float64 `toml:"p50_ms,omitempty" json:"p50_ms,omitempty"`
	P90Ms     *float64 `toml:"p90_ms,omitempty" json:"p90_ms,omitempty"`
	P95Ms     *float64 `toml:"p95_ms,omitempty" json:"p95_ms,omitempty"`
	P99Ms     *float64 `toml:"p99_ms,omitempty" json:"p99_ms,omitempty"`
	P999Ms    *float64 `toml:"p999_ms,omitempty" json:"p999_ms,omitempty"`
	MaxMs     *float64 `toml:"max_ms,omitempty" json:"max_ms,omitempty"`
	MeanMs    *float64 `toml:"mean_ms,omitempty" json:"mean_ms,omitempty"`
	ErrorRate *float64 `toml:"error_rate,omitempty" json:"error_rate,omitempty"`
	MinRPS    *float64 `toml:"min_rps,omitempty" json:"min_rps,omitempty"`
}

// metric is one figure a limit can bound.
type metric struct {
	key   string
	limit func(*Limits) *float64
	value func(Operation) float64
	lower bool // the limit is a lower bound
	max   float64
}

var metrics = []metric{
	{"p50_ms", func(l *Limits) *float64 { return l.P50Ms }, func(o Operation) float64 { return o.Latency.P50Ms }, false, math.MaxFloat64},
	{"p90_ms", func(l *Limits) *float64 { return l.P90Ms }, func(o Operation) float64 { return o.Latency.P90Ms }, false, math.MaxFloat64},
	{"p95_ms", func(l *Limits) *float64 { return l.P95Ms }, func(o Operation) float64 { return o.Latency.P95Ms }, false, math.MaxFloat64},
	{"p99_ms", func(l *Limits) *float64 { return l.P99Ms }, func(o Operation) float64 { return o.Latency.P99Ms }, false, math.MaxFloat64},
	{"p999_ms", func(l *Limits) *float64 { return l.P999Ms }, func(o Operation) float64 { return o.Latency.P999Ms }, false, math.MaxFloat64},
	{"max_ms", func(l *Limits) *float64 { return l.MaxMs }, func(o Operation) float64 { return o.Latency.MaxMs }, false, math.MaxFloat64},
	{"mean_ms", func(l *Limits) *float64 { return l.MeanMs }, func(o Operation) float64 { return o.Latency.MeanMs }, false, math.MaxFloat64},
	{"error_rate", func(l *Limits) *float64 { return l.ErrorRate }, errorRate, false, 1},
	{"min_rps", func(l *Limits) *float64 { return l.MinRPS }, func(o Operation) float64 { return o.CompletedRPS }, true, math.MaxFloat64},
}

func errorRate(o Operation) float64 {
	if o.Count == 0 {
		return 0
	}
	return float64(o.Errors) / float64(o.Count)
}

// A Breach is one threshold a run broke.
type Breach struct {
	// Operation is "total" or the operation the threshold names.
	Operation string
	// Metric is the key broken ("p99_ms"); empty when the operation did
	// not run at all.
	Metric       string
	Limit, Value float64
	lower        bool
}

func (b Breach) String() string {
	if b.Metric == "" {
		return fmt.Sprintf("%s: no such operation in this run, so its thresholds cannot hold", b.Operation)
	}
	op := ">"
	if b.lower {
		op = "<"
	}
	return fmt.Sprintf("%s: %s %s %s %s", b.Operation, b.Metric, strconv.FormatFloat(b.Value, 'g', 6, 64), op, strconv.FormatFloat(b.Limit, 'g', -1, 64))
}

// Check returns every threshold s breaks: those in total first, then by
// operation name. A nil Thresholds holds always.
func (t *Thresholds) Check(s Summary) []Breach {
	if t == nil {
		return nil
	}
	byName := map[string]Operation{}
	for _, o := range s.Operations {
		byName[o.Name] = o
	}
	var out []Breach
	check := func(name string, l *Limits) {
		o, ok := byName[name]
		if !ok {
			if l.any() {
				out = append(out, Breach{Operation: name})
			}
			return
		}
		for _, m := range metrics {
			lim := m.limit(l)
			if lim == nil {
				continue
			}
			v := m.value(o)
			if (m.lower && v < *lim) || (!m.lower && v > *lim) {
				out = append(out, Breach{Operation: name, Metric: m.key, Limit: *lim, Value: v, lower: m.lower})
			}
		}
	}
	check("total", &t.Limits)
	for _, name := range slices.Sorted(maps.Keys(t.Operations)) {
		l := t.Operations[name]
		check(name, &l)
	}
	return out
}

func (l *Limits) any() bool {
	for _, m := range metrics {
		if m.limit(l) != nil {
			return true
		}
	}
	return false
}

// validate checks every limit's range, and that each operation named is
// one of names, when the names are known (not nil).
func (t *Thresholds) validate(names []string) []error {
	if t == nil {
		return nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &spec.KeyError{Key: "load.thresholds." + key, Msg: fmt.Sprintf(format, args...)})
	}
	limits := func(prefix string, l *Limits) {
		for _, m := range metrics {
			v := m.limit(l)
			switch {
			case v == nil:
			case math.IsNaN(*v) || math.IsInf(*v, 0):
				bad(prefix+m.key, "must be a finite number, got %s", spec.Echo(*v))
			case *v < 0 || *v > m.max:
				if m.max == 1 {
					bad(prefix+m.key, "must be between 0 and 1 (a share of the requests), got %v", *v)
				} else {
					bad(prefix+m.key, "must be >= 0, got %v", *v)
				}
			}
		}
	}
	limits("", &t.Limits)
	for _, name := range slices.Sorted(maps.Keys(t.Operations)) {
		prefix := "operations." + quoteKeyPart(name) + "."
		l := t.Operations[name]
		limits(prefix, &l)
		if names != nil && !slices.Contains(names, name) {
			bad(strings.TrimSuffix(prefix, "."), "no operation of this run is named %s (they are %s)", spec.Echo(name), alternatives(names))
		}
	}
	return errs
}

// quoteKeyPart writes one part of a dotted key as the spec's key index
// does, quoted when it holds a dot, a space or a quote, so that an error
// about an operation's threshold is located at its line.
func quoteKeyPart(s string) string {
	if s == "" || strings.ContainsAny(s, ". \"") {
		return strconv.Quote(s)
	}
	return s
}

// A ThresholdState is one threshold and how it stands.
type ThresholdState struct {
	// Operation is "total" or the operation the threshold names; Metric
	// its key ("p99_ms"), and Limit its value.
	Operation string  `json:"operation"`
	Metric    string  `json:"metric"`
	Limit     float64 `json:"limit"`
	// Lower marks a lower bound (min_rps).
	Lower bool `json:"lower,omitempty"`
	// State is "holds", "broken", or "pending" while a summary so far has
	// no figures of its operation.
	State string `json:"state"`
}

func (s ThresholdState) String() string {
	op := "<="
	if s.Lower {
		op = ">="
	}
	return fmt.Sprintf("%s: %s %s %s", s.Operation, s.Metric, op, strconv.FormatFloat(s.Limit, 'g', -1, 64))
}

// States lists every threshold t sets, in Check's order, as it stands
// against s, judged by Check: so a live view's states and run.json's
// broken thresholds are one judgment. A final summary (a run's result)
// breaks the thresholds of an operation it lacks, as Check says; a
// summary so far (Tally's, which has only the total) leaves them
// pending.
func (t *Thresholds) States(s Summary, final bool) []ThresholdState {
	if t == nil {
		return nil
	}
	broken, missing := map[string]bool{}, map[string]bool{}
	for _, b := range t.Check(s) {
		if b.Metric == "" {
			missing[b.Operation] = true
		}
		broken[b.Operation+" "+b.Metric] = true
	}
	var out []ThresholdState
	add := func(name string, l *Limits) {
		for _, m := range metrics {
			lim := m.limit(l)
			if lim == nil {
				continue
			}
			st := ThresholdState{Operation: name, Metric: m.key, Limit: *lim, Lower: m.lower, State: "holds"}
			switch {
			case missing[name] && !final:
				st.State = "pending"
			case missing[name], broken[name+" "+m.key]:
				st.State = "broken"
			}
			out = append(out, st)
		}
	}
	add("total", &t.Limits)
	for _, name := range slices.Sorted(maps.Keys(t.Operations)) {
		l := t.Operations[name]
		add(name, &l)
	}
	return out
}
