// Package warn is a run's warnings: each has a kind, which programs match
// (the runner counts the saturated runs, the analysis folds the kube
// deployer's resource notes into one line), and a text, which people read.
// run.json, shard.json and the CLI carry them; docs/RESULTS.md lists the
// kinds.
//
// Results written before warnings had kinds hold plain strings whose kind
// was their prefix ("saturated: …"); Parse derives the kind of such a
// string, and a Warning decodes from either form.
package warn

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Kind names what a warning is about; its value is run.json's "kind".
type Kind string

// The kinds svclab writes. Most texts start with their kind and ": ".
const (
	// GeneratorBottleneck: the load generator fell behind, so the
	// latencies hold its own lag (docs/LOAD.md, "The generator's audit").
	GeneratorBottleneck Kind = "generator_bottleneck"
	// GeneratorAudit: too few sends to judge the generator.
	GeneratorAudit Kind = "generator_audit"
	// GeneratorLag: the generator's lag could account for a share of a
	// reported percentile.
	GeneratorLag Kind = "generator_lag"
	// GeneratorGC: the late sends fell in the seconds the generator
	// paused for GC.
	GeneratorGC Kind = "generator_gc"
	// HostLate: the host, not the generator, woke the sends late.
	HostLate Kind = "host_late"
	// Dropped: arrivals not sent because of load.max_inflight.
	Dropped Kind = "dropped"
	// Saturated: an open loop completed far fewer requests than offered.
	Saturated Kind = "saturated"
	// Stalled: the system under test stopped answering for a second or
	// more of the window.
	Stalled Kind = "stalled"
	// WarmupCut: load.warmup ended a warm-up by calls early.
	WarmupCut Kind = "warmup_cut"
	// Interrupted: the run was stopped mid-window ("interrupted after …").
	Interrupted Kind = "interrupted"
	// Traces: the run's traces could not be read.
	Traces Kind = "traces"
	// SpansDropped: the trace check found spans missing (its text has
	// no prefix: "3 spans lost their parent: …").
	SpansDropped Kind = "spans_dropped"
	// Metrics: the run's Prometheus series could not be read.
	Metrics Kind = "metrics"
	// Resources: a cluster served no resource samples of the pods; about
	// the environment, not the run.
	Resources Kind = "resources"
)

// Warning is one line of run.json's "warnings".
type Warning struct {
	Kind Kind `json:"kind"`
	// Text is the line as shown to people, kind included where it
	// starts the text.
	Text string `json:"text"`
}

// Newf is a warning of kind k whose text is "k: " and the formatted rest.
func Newf(k Kind, format string, args ...any) Warning {
	return Warning{Kind: k, Text: string(k) + ": " + fmt.Sprintf(format, args...)}
}

// About is w said of who (one generator of several): who follows the
// kind that starts the text ("saturated: generator 0/2: …"), or starts a
// text that does not begin with its kind ("generator 0/2: interrupted
// after …").
func (w Warning) About(who string) Warning {
	if rest, ok := strings.CutPrefix(w.Text, string(w.Kind)+": "); ok && w.Kind != "" {
		w.Text = string(w.Kind) + ": " + who + ": " + rest
	} else {
		w.Text = who + ": " + w.Text
	}
	return w
}

// Find returns the first warning of kind k.
func Find(ws []Warning, k Kind) (Warning, bool) {
	i := slices.IndexFunc(ws, func(w Warning) bool { return w.Kind == k })
	if i < 0 {
		return Warning{}, false
	}
	return ws[i], true
}

var (
	// a merged generator's kindless warning, as Merge named it
	ofGenerator = regexp.MustCompile(`^generator [0-9]+/[0-9]+: `)
	prefix      = regexp.MustCompile(`^([a-z][a-z0-9_]*): `)
	spans       = regexp.MustCompile(`^[0-9]+ (span|client or proxy span|trace|call)(\(s\)|s)? `)
)

// Parse is the warning of a plain string, as results written before
// warnings had kinds hold them: the kind is the word before the first
// ": " (generator_bottleneck, saturated, …), or Interrupted or
// SpansDropped for those texts, which have none; "" when the text shows
// no kind. analysis/src/svclab_analysis/results.py derives it alike, and
// testdata/legacy.json holds both to the same cases.
func Parse(s string) Warning {
	w := Warning{Text: s}
	body := ofGenerator.ReplaceAllString(s, "")
	switch m := prefix.FindStringSubmatch(body); {
	case m != nil:
		w.Kind = Kind(m[1])
	case strings.HasPrefix(body, "interrupted after "):
		w.Kind = Interrupted
	case spans.MatchString(body):
		w.Kind = SpansDropped
	}
	return w
}

// UnmarshalJSON reads {"kind", "text"}, or a plain string of an older
// result (Parse).
func (w *Warning) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("warning: %w", err)
		}
		*w = Parse(s)
		return nil
	}
	type plain Warning // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("warning: want {\"kind\", \"text\"} or a string: %w", err)
	}
	*w = Warning(p)
	return nil
}
