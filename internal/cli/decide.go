package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/experiment"
)

// decideWithAnalysis asks the analysis whether the questions of the
// experiment in dir are decided: `svclab-analysis decide DIR --format
// json`, the runner's cue to stop a sequential experiment after a block.
func decideWithAnalysis(ctx context.Context, dir string) (experiment.Decision, error) {
	bin, err := analysisCommand()
	if err != nil {
		return experiment.Decision{}, err
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "decide", dir, "--format", "json")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return experiment.Decision{}, fmt.Errorf("%s decide %s: %w: %s", bin, dir, err, strings.TrimSpace(stderr.String()))
	}
	return parseDecision(out.Bytes())
}

// decideJSON is the part of `svclab-analysis decide --format json` the
// runner reads (docs/ANALYSIS.md, "svclab-analysis decide").
type decideJSON struct {
	Decided   bool `json:"decided"`
	Questions []struct {
		Name    string `json:"name"`
		Decided bool   `json:"decided"`
		Runs    int    `json:"runs"`
		Blocks  int    `json:"blocks"`
		Flagged int    `json:"flagged"`
		Ratios  []struct {
			By      map[string]string `json:"by"`
			Ratio   *float64          `json:"ratio"`
			Low     *float64          `json:"low"`
			High    *float64          `json:"high"`
			Verdict string            `json:"verdict"`
			// Confidence is the interval's own level (the question's,
			// shared among its ratios).
			Confidence *float64 `json:"confidence"`
		} `json:"ratios"`
		Notes []string `json:"notes"`
	} `json:"questions"`
}

// parseDecision reads the analysis's answer into a decision with one line
// per question and per ratio.
func parseDecision(b []byte) (experiment.Decision, error) {
	var dj decideJSON
	if err := json.Unmarshal(b, &dj); err != nil {
		return experiment.Decision{}, fmt.Errorf("read svclab-analysis decide's answer: %w", err)
	}
	d := experiment.Decision{Decided: dj.Decided}
	for _, q := range dj.Questions {
		state := "undecided"
		if q.Decided {
			state = "decided"
		}
		line := fmt.Sprintf("%s: %s (%s, %s", q.Name, state, english.Count(q.Runs, "run"), english.Count(q.Blocks, "complete block"))
		if q.Flagged > 0 {
			// A block holding a flagged run is not complete: say why.
			line += fmt.Sprintf("; %s left out: the load generator was %s bottleneck", english.Count(q.Flagged, "flagged run"), english.Agree(q.Flagged, "its", "their"))
		}
		d.Lines = append(d.Lines, line+")")
		for _, r := range q.Ratios {
			var cell []string
			for _, k := range slices.Sorted(maps.Keys(r.By)) {
				cell = append(cell, k+"="+r.By[k])
			}
			where := strings.Join(cell, " ")
			if where == "" {
				where = "all"
			}
			level := ""
			if r.Confidence != nil {
				level = fmt.Sprintf("%.4g%% CI ", 100**r.Confidence)
			}
			d.Lines = append(d.Lines, fmt.Sprintf("  %s: %s× (%s%s to %s) %s", where, num(r.Ratio), level, num(r.Low), num(r.High), r.Verdict))
		}
		for _, n := range q.Notes {
			d.Lines = append(d.Lines, "  "+n)
		}
	}
	return d, nil
}

// num writes a ratio to three significant digits; a bound the data
// cannot give yet (null) is "?".
func num(v *float64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprintf("%.3g", *v)
}
