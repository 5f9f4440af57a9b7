package main

import "testing"

// TestRunResilienceGroupTimeout cuts the hop into hop3 for three seconds
// with a hop-wide timeout of 1 s, and makes the timeout of calls into
// hop3 alone a factor ([deploy.resilience.groups.hop3]): inside the cut
// the median call fails after the group's timeout, 100 ms, where the
// hop-wide 1 s applies without the override.
func TestRunResilienceGroupTimeout(t *testing.T) {
	t.Parallel()
	const src = `
[app]
name = "chain"
hops = 3
[deploy]
placement = "split"
[deploy.faults.link_cut]
target = "hop3"
start = "1s"
duration = "3s"
[deploy.resilience]
timeout = "1s"
[deploy.resilience.groups.hop3]
timeout = "1s"
[load]
rate = 50
warmup = "500ms"
duration = "6s"
[experiment]
name = "f"
order = "sequential"
seed = 1
[experiment.factors]
"deploy.resilience.groups.hop3.timeout" = ["1s", "100ms"]
`
	runs := runFaults(t, src, "deploy.resilience.groups.hop3.timeout")
	for level, r := range runs {
		if r.file.Status != "ok" || len(r.file.Faults) != 1 || r.file.Faults[0].Error != "" {
			t.Fatalf("timeout %s: run %s (%s), faults %+v", level, r.file.Status, r.file.Reason, r.file.Faults)
		}
		if e := r.errorShare(0, 1); e > 0.01 {
			t.Errorf("timeout %s: %.1f%% errors before the cut", level, 100*e)
		}
	}
	// Seconds 2 and 3 lie wholly inside the cut (1–4 s).
	p50 := func(level string) float64 { return (runs[level].series[2].P50Ms + runs[level].series[3].P50Ms) / 2 }
	if p := p50(`"1s"`); p < 900 || p > 1300 {
		t.Errorf("hop3's timeout 1s: p50 %.1f ms inside the cut, want about 1000", p)
	}
	if p := p50(`"100ms"`); p < 90 || p > 300 {
		t.Errorf("hop3's timeout 100ms: p50 %.1f ms inside the cut, want about 100", p)
	}
	for level, r := range runs {
		if e := r.errorShare(2, 4); e < 0.9 {
			t.Errorf("timeout %s: %.1f%% errors inside the cut, want nearly all", level, 100*e)
		}
	}
}
