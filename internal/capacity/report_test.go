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
}

// TestAnswer: the answer line says what the rate is, a capacity or a bound
// on one, and what to change when the search could not find the knee;
// rates are rounded.
func TestAnswer(t *testing.T) {
	at := func(rates ...float64) []Step {
		steps := make([]Step, len(rates))
		for i, r := range rates {
			steps[i].Rate = r
		}
		return steps
	}
	high := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		f    File
		want string
	}{
		{"converged", File{Rate: 800, Interval: Interval{Low: 800, High: high(825)}, StopReason: Converged, StopDetail: "held", Steps: make([]Step, 16)},
			"capacity: 800/s (the lowest failing rate is 825/s; 16 steps)\nstop: converged: held"},
		{"rounded", File{Rate: 412.109375, Interval: Interval{Low: 412.109375, High: high(431.25)}, StopReason: Converged, StopDetail: "held", Steps: make([]Step, 9)},
			"capacity: 412/s (the lowest failing rate is 431/s; 9 steps)\nstop: converged: held"},
		{"generator, isolated", File{Rate: 200, StopReason: GeneratorBottleneck, StopDetail: "d", Steps: at(50, 100, 200, 400), Isolated: true},
			"capacity: ≥ 200/s (lower bound: the generator was the bottleneck at 400/s; 4 steps)\n" +
				`to measure beyond it, give the load generator more CPU: experiment.isolation = "none" (it then shares every CPU with the deployment), or split the rate over more load.generators` +
				"\nstop: generator_bottleneck: d"},
		{"generator, shared", File{Rate: 18.75, StopReason: GeneratorBottleneck, StopDetail: "d", Steps: at(12.5, 18.75, 28.125)},
			"capacity: ≥ 18.8/s (lower bound: the generator was the bottleneck at 28.1/s; 3 steps)\n" +
				"to measure beyond it, give the load generator more CPU: split the rate over more load.generators, or run it on a machine of its own" +
				"\nstop: generator_bottleneck: d"},
		{"generator first", File{StopReason: GeneratorBottleneck, StopDetail: "d", Steps: at(50)},
			"capacity: unknown (the generator was the bottleneck at 50/s before any rate passed; 1 step)\n" +
				"to measure beyond it, give the load generator more CPU: split the rate over more load.generators, or run it on a machine of its own" +
				"\nstop: generator_bottleneck: d"},
		{"max rate", File{Rate: 1000, StopReason: MaxRate, StopDetail: "d", Steps: at(500, 1000)},
			"capacity: ≥ 1000/s (lower bound: the highest rate allowed passed; raise --max-rate; 2 steps)\nstop: max_rate: d"},
		{"min rate", File{StopReason: MinRate, StopDetail: "d", Steps: at(50, 25, 0.05)},
			"capacity: below 0.05/s (even the lowest rate allowed broke an SLO; lower --min-rate; 3 steps)\nstop: min_rate: d"},
		{"max steps", File{Rate: 600, Interval: Interval{Low: 600, High: high(700)}, StopReason: MaxSteps, StopDetail: "d", Steps: at(600, 700)},
			"capacity: between 600/s and 700/s (the steps ran out before the interval was narrow; raise --max-steps; 2 steps)\nstop: max_steps: d"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Answer(); got != tc.want {
				t.Errorf("Answer =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
