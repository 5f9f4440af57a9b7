package capacity

import (
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/load"
)

func TestFileAndPlot(t *testing.T) {
	q := &queue{k: 1000, serviceMs: 10}
	slo := p99SLO(50)
	out, err := Search(context.Background(), Settings{Start: 50}, slo, q.step, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFile(out, slo)
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	iv := back["interval"].(map[string]any)
	if back["rate"] != 800.0 || iv["low"] != 800.0 || iv["high"] != 825.0 || back["stop_reason"] != "converged" {
		t.Fatalf("file %s: want rate 800 in [800, 825), converged", b)
	}
	if steps := back["steps"].([]any); len(steps) != 16 || steps[0].(map[string]any)["phase"] != "bracket" {
		t.Fatalf("steps %v: want the 16 steps of the search", steps)
	}
	if back["slos"].(map[string]any)["p99_ms"] != 50.0 {
		t.Fatalf("slos %v: want p99_ms 50", back["slos"])
	}

	// An outcome with no failing step has no top.
	if b, _ := json.Marshal(NewFile(&Outcome{Rate: 300, High: math.Inf(1), Stop: MaxRate}, slo)); !strings.Contains(string(b), `"high":null`) || !strings.Contains(string(b), `"steps":[]`) {
		t.Fatalf("no failing step: %s, want high null and steps []", b)
	}

	path := filepath.Join(t.TempDir(), "capacity.png")
	if dir := os.Getenv("CAPACITY_PLOT_DIR"); dir != "" {
		path = filepath.Join(dir, "capacity.png") // to look at it
	}
	if err := Plot(NewFile(out, slo), path); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg, err := png.DecodeConfig(r)
	if err != nil || cfg.Width < 300 || cfg.Height < 200 {
		t.Fatalf("plot: %+v, %v; want a PNG of a readable size", cfg, err)
	}
	if err := Plot(&File{}, path); err == nil {
		t.Fatal("a plot of no steps: want an error")
	}
}

func TestWords(t *testing.T) {
	slo := &load.Thresholds{Limits: load.Limits{P99Ms: ptr(50), ErrorRate: ptr(0.01), MinRPS: ptr(10)},
		Operations: map[string]load.Limits{"GET /x": {P50Ms: ptr(5)}}}
	if got, want := DescribeSLOs(slo), `p99_ms <= 50, error_rate <= 0.01, min_rps >= 10, thresholds of "GET /x"`; got != want {
		t.Errorf("DescribeSLOs = %q, want %q", got, want)
	}
	st := Step{Index: 4, Phase: Bracket, Rate: 120, CutShort: "after 1 s ...", DurationS: 1, Breaches: []string{"total: p99_ms 585.7 > 200"},
		Generator: "late sends", Latency: load.Stats{P50Ms: 400.891, P99Ms: 585.7}, CompletedRPS: 112.2}
	line := st.Line(&Outcome{Rate: 60, High: math.Inf(1)})
	for _, want := range []string{"step  4 bracket      120/s", "p50  400.89 ms", "p99   585.70 ms", "done    112.2/s (cut after 1.0 s)",
		"FAIL: total: p99_ms 585.7 > 200 (generator flagged, verdict stands: late sends)", "| [60, ∞)"} {
		if !strings.Contains(line, want) {
			t.Errorf("step line %q lacks %q", line, want)
		}
	}
	high := 825.0
	f := &File{Rate: 800, Interval: Interval{Low: 800, High: &high}, StopReason: Converged, StopDetail: "held", Steps: make([]Step, 16)}
	if got, want := f.Answer(), "capacity: 800/s (the lowest failing rate is 825/s; 16 steps)\nstop: converged: held"; got != want {
		t.Errorf("Answer = %q, want %q", got, want)
	}
}
