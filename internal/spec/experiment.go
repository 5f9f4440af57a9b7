package spec

import (
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/english"
)

// Experiment is the [experiment] table: which factors vary, how the runs are
// designed, ordered and timed.
type Experiment struct {
	// Name names the results directory; the spec file's stem by default.
	Name string
	// Design is "full" (the default) or "fractional".
	Design string
	// Generators define the fractional design, e.g. D = "ABC": the factor
	// with letter D takes the product of the signs of A, B and C.
	Generators []Generator
	// Repetitions is r, the number of runs of each design point.
	Repetitions int
	// MaxRuns caps the runs the design may make, design points times
	// repetitions, which is checked before anything is expanded.
	MaxRuns int
	// Order is "random" (the default), "sequential", "interleaved" or
	// "blocked".
	Order string
	// Seed randomises the run order. Nil means choose one and record it.
	Seed *int64
	// Warmup and Duration time each run, the same for every run; nil
	// means the [load] table's value.
	Warmup, Duration *Duration
	// Cooldown is the pause between runs.
	Cooldown Duration
	// Response names the headline metric of the report, e.g. "p99_ms".
	Response string
	// Factors in the order the spec writes them.
	Factors []Factor
	// Isolation is IsolationCPUSet, IsolationNone, or empty (left out):
	// cpuset where cgroups allow it.
	Isolation string
	// Questions are [[experiment.questions]], which the report answers
	// first.
	Questions []Question
	// Until is UntilDecided for a design run in blocks until its
	// questions are decided, within MaxRuns (when written) and Budget;
	// empty for a design run Repetitions times.
	Until string
	// Budget bounds the time of an until = "decided" experiment; 0 means
	// no bound but MaxRuns.
	Budget Duration
}

// Factor is one varied key, with its levels and the letter that names it in
// designs and allocation tables (A, B, C, ... in spec order).
type Factor struct {
	Name   string
	Letter string
	Levels []any
	Line   int
	// Keys are the keys a linked factor's every level sets (each level a
	// table of them, e.g. mesh = [{"deploy.mtls" = false, ...}, ...]);
	// nil for a factor that is one key.
	Keys []string
}

// Generator defines one factor of a fractional design as a product of
// others, e.g. {Letter: "D", Word: "ABC"}.
type Generator struct {
	Letter string
	Word   string
	Line   int
}

// experimentTable is [experiment] as written, minus factors and generators,
// whose order matters and which are read from the tree directly.
type experimentTable struct {
	Name        string         `toml:"name"`
	Design      string         `toml:"design"`
	Repetitions *int           `toml:"repetitions"`
	MaxRuns     *int           `toml:"max_runs"`
	Order       string         `toml:"order"`
	Seed        *int64         `toml:"seed"`
	Warmup      *Duration      `toml:"warmup"`
	Duration    *Duration      `toml:"duration"`
	Cooldown    Duration       `toml:"cooldown"`
	Response    string         `toml:"response"`
	Factors     map[string]any `toml:"factors"`
	Generators  map[string]any `toml:"generators"`
	Isolation   string         `toml:"isolation"`
	Questions   []any          `toml:"questions"`
	Until       string         `toml:"until"`
	Budget      Duration       `toml:"budget"`
}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	letterRE = regexp.MustCompile(`^[A-Z]$`)
	wordRE   = regexp.MustCompile(`^[A-Z]+$`)
)

// Limits of [experiment].
const (
	// DefaultMaxRuns is experiment.max_runs when the spec leaves it out:
	// at a few seconds a run, well over a day of runs.
	DefaultMaxRuns = 10000
	// maxMaxRuns bounds experiment.max_runs itself, so that a typo there
	// cannot lift the cap altogether.
	maxMaxRuns = 1_000_000
	// MaxGenerators bounds a fractional design's generators: the defining
	// relation has 2^p - 1 words and every alias set 2^p effects, so past
	// this the alias list alone takes megabytes and seconds to build, and
	// no one reads it. 11 still allows 2^(15-11), 15 factors in 16 runs.
	MaxGenerators = 11
)

// ResponseMetrics are the run-level metrics a report can lead with.
var ResponseMetrics = []string{"p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "mean_ms", "max_ms", "rps", "error_rate"}

func (s *Spec) decodeExperiment() error {
	var t experimentTable
	// Every key is checked, so that one pass reports every mistake: the
	// values that decoded beside the keys that did not; the design only
	// when the keys it follows from are right.
	var errs Errors
	errs.Add(s.Decode("experiment", &t))
	e := Experiment{
		Name: t.Name, Design: t.Design, Order: t.Order, Seed: t.Seed,
		Warmup: t.Warmup, Duration: t.Duration, Cooldown: t.Cooldown, Response: t.Response,
		Repetitions: 1, MaxRuns: DefaultMaxRuns, Isolation: t.Isolation,
		Until: t.Until, Budget: t.Budget,
	}
	errs.AddLater(s.checkIsolation(t.Isolation))
	switch {
	case !s.written("experiment.name"):
		base := s.Path[strings.LastIndex(s.Path, "/")+1:]
		e.Name = strings.TrimSuffix(base, ".toml")
	case !nameRE.MatchString(e.Name):
		errs.AddLater(s.Errorf("experiment.name", "must be letters, digits, '.', '_' or '-' (it names a directory), got %q", e.Name))
	}
	if t.Repetitions != nil {
		if *t.Repetitions < 1 || *t.Repetitions > 10000 {
			errs.AddLater(s.Errorf("experiment.repetitions", "must be between 1 and 10000, got %d", *t.Repetitions))
		}
		e.Repetitions = *t.Repetitions
	}
	if t.Duration != nil && *t.Duration == 0 {
		errs.AddLater(s.Errorf("experiment.duration", "must be > 0, got %s (leave the key out for load.duration)", *t.Duration))
	}
	if t.MaxRuns != nil {
		if *t.MaxRuns < 1 || *t.MaxRuns > maxMaxRuns {
			errs.AddLater(s.Errorf("experiment.max_runs", "must be between 1 and %d, got %d", maxMaxRuns, *t.MaxRuns))
		}
		e.MaxRuns = *t.MaxRuns
	}
	// A key written as "" is refused rather than taken for its default.
	if e.Design == "" && !s.written("experiment.design") {
		e.Design = "full"
	} else if e.Design != "full" && e.Design != "fractional" {
		errs.AddLater(s.Errorf("experiment.design", "must be \"full\" or \"fractional\", got %q", e.Design))
	}
	if e.Order == "" && !s.written("experiment.order") {
		e.Order = "random"
	} else if !slices.Contains([]string{"random", "sequential", "interleaved", "blocked"}, e.Order) {
		errs.AddLater(s.Errorf("experiment.order", "must be \"random\", \"sequential\", \"interleaved\" or \"blocked\", got %q", e.Order))
	}
	if e.Response == "" && !s.written("experiment.response") {
		e.Response = "p99_ms"
	} else if !slices.Contains(ResponseMetrics, e.Response) {
		errs.AddLater(s.Errorf("experiment.response", "unknown metric %q (one of %s)", e.Response, strings.Join(ResponseMetrics, ", ")))
	}
	var err error
	e.Factors, err = s.factors(t.Factors)
	errs.AddLater(err)
	// The factors' names and letters are known whatever is wrong with
	// their levels, and they are all that the generators and the
	// questions are checked against: a mistake in a factor hides none of
	// theirs. Past 26 factors there are no letters, and the questions
	// are checked against the names as written.
	named := e.Factors
	if len(named) == len(t.Factors) {
		e.Generators, err = s.generators(t.Generators, e.Factors)
		errs.AddLater(err)
	} else {
		named = nil
		for _, name := range s.orderedChildren("experiment.factors", t.Factors) {
			named = append(named, Factor{Name: name})
		}
	}
	e.Questions, err = s.questions(t.Questions, named)
	errs.AddLater(err)
	if t.Budget < 0 {
		errs.AddLater(s.Errorf("experiment.budget", "must be > 0, got %s", t.Budget))
	}
	errs.AddLater(s.checkUntil(&e))
	// The design points follow from these keys; a mistake elsewhere in
	// [experiment] (its name, its order) leaves them known.
	var designErr error
	switch {
	case errs.foundAt("experiment.design", "experiment.factors", "experiment.generators"):
		s.designUnknown = true
	case e.Design == "fractional" && len(e.Generators) == 0:
		designErr = s.Errorf("experiment.design", "a fractional design needs [experiment.generators], e.g. D = \"ABC\"")
	case e.Design == "full" && len(e.Generators) > 0:
		designErr = s.Errorf("experiment.generators", "generators need design = \"fractional\"")
	case errs.foundAt("experiment.repetitions", "experiment.max_runs"):
		// The points are known, and checked if they are not too many
		// by default: the run count is these keys' to say, once right.
		bound := e
		bound.Repetitions, bound.MaxRuns = 1, DefaultMaxRuns
		s.designUnknown = s.checkRunCount(bound) != nil
	default:
		designErr = s.checkRunCount(e)
	}
	if designErr != nil {
		s.designUnknown = true
		errs.AddLater(designErr)
	}
	s.Experiment = e
	return errs.Err()
}

// DesignKnown reports whether the design points of s are known for sure:
// the keys of [experiment] they follow from are right, and there are not
// too many. Parse may return a spec with an error and its design known
// (a mistake in [deploy], or in experiment.name): its points can then be
// checked in the same pass.
func (s *Spec) DesignKnown() bool { return !s.designUnknown }

// AtFirstLevels returns s with each factor's key set to the factor's
// first level as written, as a design point sets it, and the errors of
// that setting: for checking [app], [deploy] and [load] while the design
// points are not known (DesignKnown). A factor whose name is no key is
// then refused at its line, as at a design point: a name that is no
// dotted key of [app], [deploy] or [load] here (With), one that is no
// key of its table by the table's owner when it decodes it, with the key
// it likely meant (unknownKey). Such a factor sets nothing, and neither
// does one with no level to take (none written, or a linked factor's
// levels wrong). The keys no factor sets keep their values, and are
// checked as written; what a check says of a key a factor sets
// (SetByFactor) is about a level that may not be one, and is to be left
// out. The error also holds what With says of the point's [deploy].
func (s *Spec) AtFirstLevels() (*Spec, error) {
	raw, _ := s.Lookup("experiment.factors")
	factors, _ := raw.(map[string]any)
	at, levels := s, map[string]any{}
	var errs Errors
	var pointErr error
	for _, name := range s.orderedChildren("experiment.factors", factors) {
		level, ok := s.firstLevel(name, factors[name])
		if !ok {
			continue
		}
		levels[name] = level
		p, err := s.With(levels)
		if p == nil {
			// The factor names no key a level can set; the others
			// are set without it.
			errs.Add(err)
			delete(levels, name)
			continue
		}
		at, pointErr = p, err
	}
	errs.Add(pointErr)
	return at, errs.Err()
}

// firstLevel is the first level of the factor name, whose levels are
// written as raw: the first of its levels when they are right; when not,
// the first value written (or the value, if it is no list) for a factor
// that is one key. ok is false when there is none to take.
func (s *Spec) firstLevel(name string, raw any) (level any, ok bool) {
	if i := slices.IndexFunc(s.Experiment.Factors, func(f Factor) bool { return f.Name == name }); i >= 0 {
		if f := s.Experiment.Factors[i]; len(f.Levels) > 0 {
			return f.Levels[0], true
		}
	}
	if !isKeyFactor(name) {
		// Linked or not, its levels are wrong: which keys it sets is
		// not known.
		return nil, false
	}
	if l, isList := raw.([]any); isList {
		if len(l) == 0 {
			return nil, false
		}
		return l[0], true
	}
	return raw, raw != nil
}

// SetByFactor reports whether a factor's level set the value of key, or
// of a table around it (With).
func (s *Spec) SetByFactor(key string) bool {
	for k := key; k != ""; k = parentKey(k) {
		if _, ok := s.setBy[k]; ok {
			return true
		}
	}
	return false
}

// factors reads [experiment.factors] in the order the file writes them.
func (s *Spec) factors(raw map[string]any) ([]Factor, error) {
	names := s.orderedChildren("experiment.factors", raw)
	if len(names) > 26 {
		return nil, s.Errorf("experiment.factors", "at most 26 factors, got %d", len(names))
	}
	var out []Factor
	var errs Errors
	for i, name := range names {
		key := FactorKey(name)
		levels, err := s.levels(name, key, raw[name])
		errs.Add(err)
		f := Factor{Name: name, Letter: string(rune('A' + i)), Levels: levels, Line: s.Line(key)}
		if err == nil && !isKeyFactor(name) && slices.ContainsFunc(levels, isTable) {
			f.Keys, err = s.linkedLevels(name, key, levels)
			errs.Add(err)
		}
		out = append(out, f)
	}
	if errs.Len() == 0 {
		errs.Add(s.checkLinkedOverlap(out))
	}
	return out, errs.Err()
}

// levels checks the levels of the factor name, written at key.
func (s *Spec) levels(name, key string, v any) ([]any, error) {
	levels, ok := v.([]any)
	if !ok {
		return nil, s.Errorf(key, "levels must be a list, e.g. %q = [\"grpc\", \"http\"]", name)
	}
	if len(levels) < 2 {
		return nil, s.Errorf(key, "a factor needs at least two levels, got %d", len(levels))
	}
	seen := make(map[string]bool, len(levels))
	for _, l := range levels {
		text := fmt.Sprint(l)
		if seen[text] {
			return nil, s.Errorf(key, "level %s is listed twice", Echo(l))
		}
		seen[text] = true
	}
	return levels, nil
}

// CheckFactorsNotSet refuses a --set of a factor's key (or of a table that
// holds it) for the commands that run or show the design points (run,
// plan, kube render): each point sets that key to one of the factor's
// levels, so the flag's value would be silently dropped. `svclab up`,
// which deploys the spec's base values, may set it.
func (s *Spec) CheckFactorsNotSet() error {
	for _, f := range s.Experiment.Factors {
		keys := f.Keys
		if !f.Linked() {
			keys = []string{f.Name}
		}
		for _, k := range keys {
			if err := s.checkFactorNotSet(k, FactorKey(f.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Spec) checkFactorNotSet(name, key string) error {
	for _, k := range slices.Sorted(maps.Keys(s.setByFlag)) {
		if k != name && !strings.HasPrefix(k, name+".") && !strings.HasPrefix(name, k+".") {
			continue
		}
		where := key
		if l, ok := s.index.lines[key]; ok {
			where = fmt.Sprintf("%s (line %d)", key, max(0, l-s.lineShift))
		}
		return &Error{Flag: s.setByFlag[k], Key: k, Err: fmt.Errorf(
			"a factor of this experiment (%s): each design point sets it to one of the factor's levels, so this value would never be used; change the levels instead, e.g. --set %s=[…]",
			where, key)}
	}
	return nil
}

func (s *Spec) generators(raw map[string]any, factors []Factor) ([]Generator, error) {
	letters := map[string]bool{}
	for _, f := range factors {
		letters[f.Letter] = true
	}
	if len(raw) > MaxGenerators {
		return nil, s.Errorf("experiment.generators", "at most %d generators, got %d: a 2^(k-p) design with more has more aliases than can be listed", MaxGenerators, len(raw))
	}
	var out []Generator
	var errs Errors
	for _, l := range s.orderedChildren("experiment.generators", raw) {
		key := "experiment.generators." + quoteKeyPart(l)
		word, err := s.generator(key, l, raw[l], letters)
		errs.Add(err)
		out = append(out, Generator{Letter: l, Word: word, Line: s.Line(key)})
	}
	return out, errs.Err()
}

// generator checks the generator of factor letter l, written at key.
func (s *Spec) generator(key, l string, v any, letters map[string]bool) (string, error) {
	word, ok := v.(string)
	switch {
	case !letterRE.MatchString(l):
		return "", s.Errorf(key, "a generator is named by one factor letter, e.g. D = \"ABC\"")
	case !letters[l]:
		return "", s.Errorf(key, "no factor has letter %s (factors are lettered A, B, ... in the order [experiment.factors] lists them)", l)
	case !ok || !wordRE.MatchString(word):
		return "", s.Errorf(key, "must be a word of factor letters, e.g. \"ABC\"")
	}
	for _, c := range word {
		if !letters[string(c)] || string(c) == l {
			return "", s.Errorf(key, "letter %c in %q is not another factor", c, word)
		}
	}
	return word, nil
}

// checkRunCount refuses a design with more runs than experiment.max_runs.
// It counts them from the level counts alone, before anything is
// expanded, in arithmetic that cannot overflow: twenty two-level factors
// would otherwise be a million design points built before the first
// error.
func (s *Spec) checkRunCount(e Experiment) error {
	points := big.NewInt(1)
	var factors string
	if e.Design == "fractional" {
		points.Lsh(points, uint(max(0, len(e.Factors)-len(e.Generators))))
		factors = fmt.Sprintf("2^(%d-%d) for %d two-level factors and %d generators", len(e.Factors), len(e.Generators), len(e.Factors), len(e.Generators))
	} else {
		sizes := make([]string, len(e.Factors))
		for i, f := range e.Factors {
			points.Mul(points, big.NewInt(int64(len(f.Levels))))
			sizes[i] = fmt.Sprintf("%s (%d)", f.Name, len(f.Levels))
		}
		factors = "levels of " + strings.Join(sizes, " × ")
	}
	runs := new(big.Int).Mul(points, big.NewInt(int64(e.Repetitions)))
	if runs.Cmp(big.NewInt(int64(e.MaxRuns))) <= 0 {
		return nil
	}
	key := "experiment.factors"
	switch _, written := s.index.lines[key]; {
	case len(e.Factors) == 0:
		key = "experiment.repetitions"
	case !written:
		key = FactorKey(e.Factors[0].Name) // set by --set, which the error then names
	}
	// The advice comes before the list of factors, which may be long.
	return s.Errorf(key, "%s runs (%s design points × %s) are more than experiment.max_runs = %d; use a fractional design (design = \"fractional\" with [experiment.generators]), fewer factors, levels or repetitions, or raise experiment.max_runs; design points: %s",
		runs, points, english.Count(e.Repetitions, "repetition"), e.MaxRuns, factors)
}

// orderedChildren lists the keys of the table at path in file order; keys
// set by factor levels (and so absent from the file) come last, sorted.
func (s *Spec) orderedChildren(path string, raw map[string]any) []string {
	var names []string
	seen := map[string]bool{}
	prefix := path + "."
	for _, k := range s.index.order {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		name, complete := unquoteFirstPart(rest)
		if !complete || seen[name] {
			continue
		}
		if _, present := raw[name]; present {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !seen[k] {
			names = append(names, k)
		}
	}
	return names
}

// unquoteFirstPart returns the first part of a dotted key and whether the
// key had exactly that one part.
func unquoteFirstPart(k string) (string, bool) {
	if strings.HasPrefix(k, "\"") {
		q, err := strconv.QuotedPrefix(k)
		if err != nil {
			return "", false
		}
		part, err := strconv.Unquote(q)
		return part, err == nil && len(q) == len(k)
	}
	if strings.ContainsAny(k, ".[") {
		return "", false
	}
	return k, true
}

// FactorKey is the dotted key of the factor named name, as errors name it:
// experiment.factors."deploy.transport".
func FactorKey(name string) string { return "experiment.factors." + quoteKeyPart(name) }
