package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// An experiment's open-loop run is judged against the floor of its own
// window: run.json's generator object holds the sentinel's figures, the
// floor it gave, and the experiment's calibration beside them; the
// sentinel process is gone when svclab is.
func TestRunJudgedAgainstTheWindow(t *testing.T) {
	const spec = `
[app]
name = "chain"
hops = 2

[load]
rate = 100
warmup = "300ms"
duration = "1500ms"

[experiment]
name = "window"
seed = 1
`
	runs, _ := runExperiment(t, "window", spec, 1)
	m := []string{filepath.Join(runs[0], "run.json")}
	type cal struct {
		Samples     int64     `json:"samples"`
		P99Ms       float64   `json:"p99_ms"`
		IntervalsUs []float64 `json:"intervals_us"`
	}
	var rf struct {
		Generator struct {
			Verdict            string  `json:"verdict"`
			HostTimer          *cal    `json:"host_timer"`
			Sentinel           *cal    `json:"sentinel"`
			SentinelCPUPercent float64 `json:"sentinel_cpu_percent"`
			Floor              *struct {
				Source     string  `json:"source"`
				P99Ms      float64 `json:"p99_ms"`
				LimitP99Ms float64 `json:"limit_p99_ms"`
				Note       string  `json:"note"`
			} `json:"floor"`
		} `json:"generator"`
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	g := rf.Generator
	if g.Sentinel == nil || g.Sentinel.Samples < 20 || len(g.Sentinel.IntervalsUs) != 1 || g.Sentinel.IntervalsUs[0] != 10000 {
		t.Fatalf("generator.sentinel %+v: want wake-ups at the run's 10 ms gap\n%s", g.Sentinel, b)
	}
	if f := g.Floor; f == nil || f.Source != "window" || f.P99Ms != g.Sentinel.P99Ms || math.Abs(f.LimitP99Ms-(1.2*f.P99Ms+0.05)) > 1e-9 || f.Note != "" {
		t.Errorf("generator.floor %+v: want the window's, from the sentinel", f)
	}
	if g.HostTimer == nil || g.HostTimer.Samples < 100 || g.Verdict == "" || g.SentinelCPUPercent <= 0 {
		t.Errorf("generator %+v: want the experiment's calibration kept beside it, a verdict and the sentinel's cost", g)
	}
}
