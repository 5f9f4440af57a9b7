package cli

import (
	"strings"
	"testing"
)

// TestParseDecision reads svclab-analysis decide's JSON (docs/ANALYSIS.md)
// into the runner's lines: a bound the data cannot give yet is "?".
func TestParseDecision(t *testing.T) {
	in := `{"decided": false, "sequential": true, "questions": [{"name": "mesh cost", "decided": false, "runs": 8, "blocks": 2, "flagged": 1,
	  "ratios": [{"by": {"deploy.transport": "grpc"}, "level": "{}", "base": "{}", "ratio": 1.234, "low": null, "high": null, "verdict": "undecided"}],
	  "notes": ["2 complete block(s): the confidence sequence needs 4 or more for a finite interval"]}]}`
	d, err := parseDecision([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mesh cost: undecided (8 runs, 2 complete blocks; 1 flagged runs left out: the load generator was their bottleneck)",
		"  deploy.transport=grpc: 1.23× (? to ?) undecided",
		"  2 complete block(s): the confidence sequence needs 4 or more for a finite interval",
	}
	if d.Decided || strings.Join(d.Lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("decision %v:\n%s\nwant:\n%s", d.Decided, strings.Join(d.Lines, "\n"), strings.Join(want, "\n"))
	}
	if _, err := parseDecision([]byte("decided")); err == nil {
		t.Error("no error for an answer that is not JSON")
	}
}
