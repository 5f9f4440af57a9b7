package spec

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Question is one [[experiment.questions]]: a contrast of the levels of
// the factor Effect on Metric, as a ratio over its first level, per level
// of the factors By, judged against Margin. The analysis answers it
// (docs/ANALYSIS.md, "Questions"); the spec checks that it can.
type Question struct {
	Name   string
	Effect string
	By     []string
	// Metric is the analysis's name of the metric; empty means
	// experiment.response.
	Metric string
	// Margin is the claim's ratio m, or the pair [low, high] of an
	// equivalence; nil when the question asks only whether levels differ.
	Margin []float64
	Line   int
}

// questionTable is one [[experiment.questions]] as written.
type questionTable struct {
	Name   string   `toml:"name"`
	Effect string   `toml:"effect"`
	By     []string `toml:"by"`
	Metric string   `toml:"metric"`
	Margin any      `toml:"margin"`
}

// Until values of experiment.until.
const (
	// UntilDecided runs the design in blocks until every question is
	// decided or the budget is spent.
	UntilDecided = "decided"
)

// QuestionMetrics are the metrics a question may compare: the analysis's
// run-level metrics, with the spellings of experiment.response it takes
// for them (rps, error_rate).
var QuestionMetrics = []string{"p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "mean_ms", "max_ms",
	"throughput_rps", "rps", "error_rate_pct", "error_rate", "cpu_s_per_1k"}

// questions checks [[experiment.questions]] against the factors; every
// mistake is reported, each at its question's key.
func (s *Spec) questions(raw []any, factors []Factor) ([]Question, error) {
	names := map[string]bool{}
	for _, f := range factors {
		names[f.Name] = true
	}
	var list []string
	for _, f := range factors {
		list = append(list, strconv.Quote(f.Name))
	}
	known := "the factors are " + strings.Join(list, ", ")
	if len(factors) == 0 {
		known = "the experiment has no [experiment.factors]"
	}
	var out []Question
	var errs Errors
	seen := map[string]int{}
	for i, el := range raw {
		at := fmt.Sprintf("experiment.questions[%d]", i)
		// Each question's keys and types are checked on their own, so that
		// one unknown key does not hide the other mistakes.
		c := checker{s: s}
		c.check(at, el, reflect.TypeOf(questionTable{}))
		errs.Add(c.err())
		t := questionOf(el)
		q := Question{Name: t.Name, Effect: t.Effect, By: t.By, Metric: t.Metric, Line: s.Line(at)}
		if q.Name == "" {
			if _, written := s.index.lines[at+".name"]; written {
				errs.Add(s.Errorf(at+".name", "must not be empty (the report names the answer by it)"))
			}
			q.Name = fmt.Sprintf("question %d", i+1)
		}
		if j, dup := seen[q.Name]; dup {
			errs.Add(s.Errorf(at+".name", "%q names question %d too; give each question its own name", q.Name, j+1))
		}
		seen[q.Name] = i
		switch {
		case q.Effect == "":
			errs.Add(s.Errorf(at, "needs effect, the factor whose levels are compared (%s)", known))
		case !names[q.Effect]:
			errs.Add(s.Errorf(at+".effect", "%q is not a factor of this experiment; %s", q.Effect, known))
		}
		for j, b := range q.By {
			switch {
			case b == q.Effect:
				errs.Add(s.Errorf(fmt.Sprintf("%s.by[%d]", at, j), "%q is the effect itself; by names other factors, whose levels each get their own answer", b))
			case !names[b]:
				errs.Add(s.Errorf(fmt.Sprintf("%s.by[%d]", at, j), "%q is not a factor of this experiment; %s", b, known))
			case slices.Index(q.By, b) < j:
				errs.Add(s.Errorf(fmt.Sprintf("%s.by[%d]", at, j), "%q is listed twice", b))
			}
		}
		if q.Metric != "" && !slices.Contains(QuestionMetrics, q.Metric) {
			errs.Add(s.Errorf(at+".metric", "unknown metric %q (one of %s)", q.Metric, strings.Join(QuestionMetrics, ", ")))
		}
		var err error
		q.Margin, err = s.margin(at+".margin", t.Margin)
		errs.Add(err)
		out = append(out, q)
	}
	return out, errs.Err()
}

// questionOf reads a question's keys of the right type, leaving the
// others (which the checker reported) at their zero values.
func questionOf(v any) questionTable {
	m, _ := v.(map[string]any)
	var t questionTable
	t.Name, _ = m["name"].(string)
	t.Effect, _ = m["effect"].(string)
	t.Metric, _ = m["metric"].(string)
	if by, ok := m["by"].([]any); ok {
		for _, b := range by {
			if b, ok := b.(string); ok {
				t.By = append(t.By, b)
			}
		}
	}
	t.Margin = m["margin"]
	return t
}

// margin checks a question's margin: a ratio above 0 other than 1 (the
// claim "ratio ≤ m" for a metric where lower is better), or an
// equivalence [low, high] with 0 < low < 1 < high.
func (s *Spec) margin(key string, v any) ([]float64, error) {
	if v == nil {
		return nil, nil
	}
	const hint = "a ratio such as 1.10 (at most 10%% slower) or an equivalence range [0.9, 1.1]"
	switch x := v.(type) {
	case int64, float64:
		m := number(x)
		if math.IsNaN(m) || math.IsInf(m, 0) || m <= 0 || m == 1 {
			return nil, s.Errorf(key, "a margin is a ratio above 0 other than 1, got %s; "+hint, Echo(v))
		}
		return []float64{m}, nil
	case []any:
		if len(x) != 2 {
			return nil, s.Errorf(key, "an equivalence margin is two ratios [low, high], got %d; "+hint, len(x))
		}
		var pair []float64
		for _, e := range x {
			switch e.(type) {
			case int64, float64:
				pair = append(pair, number(e))
			default:
				return nil, s.Errorf(key, "must be numbers, got %s; "+hint, Echo(e))
			}
		}
		if !(pair[0] > 0 && pair[0] < 1 && pair[1] > 1 && !math.IsInf(pair[1], 0)) {
			return nil, s.Errorf(key, "an equivalence margin [low, high] needs 0 < low < 1 < high, got [%s, %s]", Echo(pair[0]), Echo(pair[1]))
		}
		return pair, nil
	}
	return nil, s.Errorf(key, "must be a number or a pair, got %s; "+hint, Echo(v))
}

func number(v any) float64 {
	if n, ok := v.(int64); ok {
		return float64(n)
	}
	return v.(float64)
}

// checkUntil checks experiment.until and the budget that bounds it.
func (s *Spec) checkUntil(e *Experiment) error {
	if e.Until == "" && !s.written("experiment.until") {
		if e.Budget > 0 {
			return s.Errorf("experiment.budget", "a budget bounds until = \"decided\"; without it the design runs experiment.repetitions times")
		}
		return nil
	}
	if e.Until != UntilDecided {
		return s.Errorf("experiment.until", "must be %q (run the design in blocks until every question is decided), got %q", UntilDecided, e.Until)
	}
	var errs Errors
	if len(e.Questions) == 0 {
		errs.Add(s.Errorf("experiment.until", "needs [[experiment.questions]]: they are what is decided"))
	}
	if !s.written("experiment.max_runs") && e.Budget == 0 {
		errs.Add(s.Errorf("experiment.until", "needs a budget: experiment.max_runs (runs), experiment.budget (time, e.g. \"45m\"), or both"))
	}
	if s.written("experiment.repetitions") {
		errs.Add(s.Errorf("experiment.repetitions", "the blocks of until = \"decided\" are its repetitions, as many as the budget allows; leave repetitions out"))
	}
	if s.written("experiment.order") && e.Order != "blocked" {
		errs.Add(s.Errorf("experiment.order", "until = \"decided\" runs every design point once per block, in a fresh random order each block (order = \"blocked\"), got %q", e.Order))
	}
	e.Order = "blocked"
	return errs.Err()
}

// Linked says whether the factor sets several keys at once: its name is
// not a key ("mesh") and its levels are tables of keys to values.
func (f Factor) Linked() bool { return f.Keys != nil }

// Assignments are the keys a level of the factor sets, each to its
// value: the factor's own key, or each key of a linked factor's level.
func (f Factor) Assignments(level any) map[string]any {
	if !f.Linked() {
		return map[string]any{f.Name: level}
	}
	m, _ := level.(map[string]any)
	return m
}

// FormatLevel writes a level as plan and progress lines show it, and as
// the analysis names it: a linked factor's level as "mtls=true,
// tracing=1" (the last part of each key, in key order), others as
// FormatValue does.
func (f Factor) FormatLevel(level any) string {
	m, ok := level.(map[string]any)
	if !f.Linked() || !ok {
		return FormatValue(level)
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := k
		if ps, err := splitParts(k); err == nil && len(ps) > 0 {
			name = ps[len(ps)-1]
		}
		parts = append(parts, name+"="+FormatValue(m[k]))
	}
	return strings.Join(parts, ", ")
}

// levelIndex is the index of level among the factor's levels, -1 if none.
func (f Factor) levelIndex(level any) int {
	return slices.IndexFunc(f.Levels, func(l any) bool { return reflect.DeepEqual(l, level) })
}

func isTable(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// isKeyFactor says whether a factor's name is a key of [app], [deploy] or
// [load] (a plain factor), rather than a name of its own (a linked one).
func isKeyFactor(name string) bool {
	parts, err := splitParts(name)
	return err != nil || len(parts) != 1 || slices.Contains([]string{"app", "deploy", "load"}, parts[0])
}

// linkedLevels checks the levels of a linked factor: tables of the same
// keys of [app], [deploy] or [load], written whole as --set takes them,
// which differ; it returns the keys.
func (s *Spec) linkedLevels(name, key string, levels []any) ([]string, error) {
	var keys []string
	var errs Errors
	for i, l := range levels {
		at := fmt.Sprintf("%s[%d]", key, i)
		m, ok := l.(map[string]any)
		if !ok || len(m) == 0 {
			errs.Add(s.Errorf(at, "a linked factor's level is a table of the keys it sets, e.g. %s = [ { \"deploy.mtls\" = false, \"deploy.tracing\" = 0.0 }, { \"deploy.mtls\" = true, \"deploy.tracing\" = 1.0 } ] (a factor that is one key is named by it: \"deploy.transport\" = [...]), got %s", quoteKeyPart(name), Echo(l)))
			continue
		}
		ks := slices.Sorted(maps.Keys(m))
		for _, k := range ks {
			parts, err := splitKey(k)
			if err != nil || !slices.Contains([]string{"app", "deploy", "load"}, parts[0]) {
				hint := ""
				if _, table := m[k].(map[string]any); table && err != nil {
					hint = fmt.Sprintf("; write the key whole and quoted, \"%s.…\" = …, as a bare dotted key makes a table", k)
				}
				errs.Add(s.Errorf(at+"."+quoteKeyPart(k), "a linked factor sets keys of [app], [deploy] or [load], written as a dotted path such as \"deploy.mtls\"%s", hint))
			}
		}
		if keys == nil {
			keys = ks
		} else if !slices.Equal(keys, ks) {
			errs.Add(s.Errorf(at, "sets %s, but level 1 sets %s; every level of a linked factor sets the same keys", strings.Join(ks, ", "), strings.Join(keys, ", ")))
		}
	}
	return keys, errs.Err()
}

// checkLinkedOverlap refuses a key that two factors set: a design point
// would set it twice.
func (s *Spec) checkLinkedOverlap(factors []Factor) error {
	by := map[string]string{}
	var errs Errors
	for _, f := range factors {
		keys := f.Keys
		if !f.Linked() {
			keys = []string{f.Name}
		}
		for _, k := range keys {
			for other, name := range by {
				if other == k || strings.HasPrefix(k, other+".") || strings.HasPrefix(other, k+".") {
					errs.Add(s.Errorf(FactorKey(f.Name), "sets %s, which factor %q sets too; a design point can set a key once", k, name))
				}
			}
		}
		for _, k := range keys {
			by[k] = f.Name
		}
	}
	return errs.Err()
}

// assignments turns a design point's levels, by factor name, into the
// keys they set, each with the key its errors point at: a plain factor's
// line, or the line of the key in a linked factor's level.
func (e Experiment) assignments(levels map[string]any) (keys map[string]any, at map[string]string) {
	keys = make(map[string]any, len(levels))
	at = make(map[string]string, len(levels))
	for name, level := range levels {
		i := slices.IndexFunc(e.Factors, func(f Factor) bool { return f.Name == name })
		if i < 0 || !e.Factors[i].Linked() {
			keys[name], at[name] = level, FactorKey(name)
			continue
		}
		f := e.Factors[i]
		li := f.levelIndex(level)
		for k, v := range f.Assignments(level) {
			keys[k], at[k] = v, fmt.Sprintf("%s[%d].%s", FactorKey(name), li, quoteKeyPart(k))
		}
	}
	return keys, at
}
