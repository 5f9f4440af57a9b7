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
