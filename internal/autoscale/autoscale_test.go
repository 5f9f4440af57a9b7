package autoscale_test

import (
	"testing"
	"time"

	"github.com/svclab/svclab/internal/autoscale"
)

const mib = 1 << 20

// ready is a replica ready for the whole sync period.
func ready(name string, usage map[string]float64) autoscale.Replica {
	return autoscale.Replica{Name: name, Ready: true, CPUWhileReady: true, Usage: usage}
}

func cpu(v float64) map[string]float64 { return map[string]float64{autoscale.CPU: v} }

func cpuTarget(pct int) []autoscale.Target {
	return []autoscale.Target{{Metric: autoscale.CPU, Utilization: pct, Request: 1}}
}

// TestDecide checks single decisions against the HPA's algorithm worked by
// hand (each case's comment is the arithmetic). The stabilization window is
// 0 unless said, so that one decision stands alone.
func TestDecide(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name     string
		cfg      autoscale.Config
		current  int
		replicas []autoscale.Replica
		desired  int
		util     []int // per target
		reason   string
	}{
		{
			// ⌊100·(0.9+0.7)/2⌋ = 80; 80/50 = 1.6; ⌈1.6·2⌉ = 4.
			name: "scale up", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 2, replicas: []autoscale.Replica{ready("a", cpu(0.9)), ready("b", cpu(0.7))},
			desired: 4, util: []int{80},
		},
		{
			// ⌊100·2.22/3⌋ = 74; 74/70 = 1.057, within 0.1.
			name: "within tolerance", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(70), Tolerance: 0.1},
			current: 3, replicas: []autoscale.Replica{ready("a", cpu(0.75)), ready("b", cpu(0.72)), ready("c", cpu(0.75))},
			desired: 3, util: []int{74}, reason: "tolerance",
		},
		{
			// 56/50 = 1.12, outside 0.1; ⌈1.12⌉ = 2.
			name: "just outside tolerance", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 1, replicas: []autoscale.Replica{ready("a", cpu(0.56))},
			desired: 2, util: []int{56},
		},
		{
			// 0.29 cores is 29%: milli-unit arithmetic, not 28.999…;
			// 29/25 = 1.16; ⌈1.16⌉ = 2.
			name: "integer percent", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(25), Tolerance: 0.1},
			current: 1, replicas: []autoscale.Replica{ready("a", cpu(0.29))},
			desired: 2, util: []int{29},
		},
		{
			// 10/50 = 0.2; ⌈0.2·4⌉ = 1.
			name: "scale down", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 4, replicas: []autoscale.Replica{ready("a", cpu(0.1)), ready("b", cpu(0.1)), ready("c", cpu(0.1)), ready("d", cpu(0.1))},
			desired: 1, util: []int{10},
		},
		{
			// As above, but min 2.
			name: "held at min", cfg: autoscale.Config{Min: 2, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 4, replicas: []autoscale.Replica{ready("a", cpu(0.1)), ready("b", cpu(0.1)), ready("c", cpu(0.1)), ready("d", cpu(0.1))},
			desired: 2, util: []int{10}, reason: "min",
		},
		{
			// 85% over the two read, 1.7 up; the missing one at 0%:
			// ⌊170/3⌋ = 56, 1.12; ⌈1.12·3⌉ = 4.
			name: "missing on scale up counts 0%", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 3, replicas: []autoscale.Replica{ready("a", cpu(0.9)), ready("b", cpu(0.8)), ready("c", nil)},
			desired: 4, util: []int{85},
		},
		{
			// 10% over the two read, 0.2 down; the missing one at 100%
			// of the target (0.5 core): ⌊100·0.7/3⌋ = 23, 0.46;
			// ⌈0.46·3⌉ = 2.
			name: "missing on scale down counts the target", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 3, replicas: []autoscale.Replica{ready("a", cpu(0.1)), ready("b", cpu(0.1)), ready("c", nil)},
			desired: 2, util: []int{10},
		},
		{
			// 90% over the ready two, 1.8 up; the unready one at 0%:
			// 60%, 1.2; ⌈1.2·3⌉ = 4.
			name: "unready cpu on scale up counts 0%", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 3, replicas: []autoscale.Replica{ready("a", cpu(0.9)), ready("b", cpu(0.9)), {Name: "c", Ready: true, Usage: cpu(0.05)}},
			desired: 4, util: []int{90},
		},
		{
			// 60%, 1.2 up; with the unready one at 0%: 40%, 0.8, the
			// other way: no change.
			name: "unready reverses the direction", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 3, replicas: []autoscale.Replica{ready("a", cpu(0.6)), ready("b", cpu(0.6)), {Name: "c", Ready: false, Usage: cpu(0.9)}},
			desired: 3, util: []int{60}, reason: "tolerance",
		},
		{
			// Scale down: the unready replica is simply set aside:
			// 10%, 0.2; ⌈0.2·2⌉ = 1.
			name: "unready cpu set aside on scale down", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 3, replicas: []autoscale.Replica{ready("a", cpu(0.1)), ready("b", cpu(0.1)), {Name: "c", Ready: false, Usage: cpu(0.9)}},
			desired: 1, util: []int{10},
		},
		{
			// Readiness sets aside CPU only: ⌊100·800/1024⌋ = 78;
			// 78/80 = 0.975, within tolerance.
			name: "memory of unready replicas counts", cfg: autoscale.Config{Min: 1, Max: 10, Tolerance: 0.1,
				Targets: []autoscale.Target{{Metric: autoscale.Memory, Utilization: 80, Request: 512 * mib}}},
			current: 2, replicas: []autoscale.Replica{
				ready("a", map[string]float64{autoscale.Memory: 500 * mib}),
				{Name: "b", Usage: map[string]float64{autoscale.Memory: 300 * mib}}},
			desired: 2, util: []int{78}, reason: "tolerance",
		},
		{
			// CPU: 20%, 0.4, ⌈0.8⌉ = 1; memory: 80%, 1.6, ⌈3.2⌉ = 4;
			// the larger wins.
			name: "larger of cpu and memory", cfg: autoscale.Config{Min: 1, Max: 10, Tolerance: 0.1,
				Targets: []autoscale.Target{{Metric: autoscale.CPU, Utilization: 50, Request: 1}, {Metric: autoscale.Memory, Utilization: 50, Request: 100 * mib}}},
			current: 2, replicas: []autoscale.Replica{
				ready("a", map[string]float64{autoscale.CPU: 0.2, autoscale.Memory: 80 * mib}),
				ready("b", map[string]float64{autoscale.CPU: 0.2, autoscale.Memory: 80 * mib})},
			desired: 4, util: []int{20, 80},
		},
		{
			// CPU proposes 1; memory has no reading: a scale down is
			// not made on part of the metrics.
			name: "unreadable metric blocks scale down", cfg: autoscale.Config{Min: 1, Max: 10, Tolerance: 0.1,
				Targets: []autoscale.Target{{Metric: autoscale.CPU, Utilization: 50, Request: 1}, {Metric: autoscale.Memory, Utilization: 50, Request: 100 * mib}}},
			current: 2, replicas: []autoscale.Replica{ready("a", cpu(0.1)), ready("b", cpu(0.1))},
			desired: 2, util: []int{10, 0}, reason: "metric missing",
		},
		{
			// 100/10 = 10; ⌈10·3⌉ = 30; the scale-up limit is
			// max(3+4, 2·3) = 7; max is 5.
			name: "held at max", cfg: autoscale.Config{Min: 1, Max: 5, Targets: cpuTarget(10), Tolerance: 0.1},
			current: 3, replicas: []autoscale.Replica{ready("a", cpu(1)), ready("b", cpu(1)), ready("c", cpu(1))},
			desired: 5, util: []int{100}, reason: "max",
		},
		{
			// ⌈10·2⌉ = 20; the limit is max(2+4, 2·2) = 6.
			name: "scale-up limit", cfg: autoscale.Config{Min: 1, Max: 20, Targets: cpuTarget(10), Tolerance: 0.1},
			current: 2, replicas: []autoscale.Replica{ready("a", cpu(1)), ready("b", cpu(1))},
			desired: 6, util: []int{100}, reason: "scale-up limit",
		},
		{
			// Shutting-down replicas are left out: 80% over one, 1.6;
			// ⌈1.6⌉ = 2.
			name: "shutting down left out", cfg: autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1},
			current: 1, replicas: []autoscale.Replica{ready("a", cpu(0.8)), {Name: "b", ShuttingDown: true, Ready: true, CPUWhileReady: true, Usage: cpu(0)}},
			desired: 2, util: []int{80},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := autoscale.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			d := a.Decide(t0, tc.current, tc.replicas)
			if d.Desired != tc.desired {
				t.Errorf("desired %d, want %d (decision %+v)", d.Desired, tc.desired, d)
			}
			for i, u := range tc.util {
				if d.Proposals[i].Utilization != u {
					t.Errorf("%s utilization %d%%, want %d%%", d.Proposals[i].Metric, d.Proposals[i].Utilization, u)
				}
			}
			if d.Reason != tc.reason {
				t.Errorf("reason %q, want %q", d.Reason, tc.reason)
			}
		})
	}
}

// TestStabilizationWindow: load falls after a decision for 4 replicas; a
// scale down waits until that recommendation leaves the 300 s window.
func TestStabilizationWindow(t *testing.T) {
	a, err := autoscale.New(autoscale.Config{Min: 1, Max: 10, Targets: cpuTarget(50), Tolerance: 0.1, ScaleDownWindow: 300 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	four := func(v float64) []autoscale.Replica {
		return []autoscale.Replica{ready("a", cpu(v)), ready("b", cpu(v)), ready("c", cpu(v)), ready("d", cpu(v))}
	}
	// At the target: 4 is recommended.
	if d := a.Decide(t0, 4, four(0.5)); d.Desired != 4 || d.Recommended != 4 {
		t.Fatalf("at target: %+v", d)
	}
	// 10%: 1 is recommended, but 4 is within the window.
	for _, s := range []int{15, 150, 300} {
		d := a.Decide(t0.Add(time.Duration(s)*time.Second), 4, four(0.1))
		if d.Recommended != 1 || d.Desired != 4 || d.Reason != "stabilization window" {
			t.Errorf("at %ds: %+v, want 1 recommended, 4 desired by the window", s, d)
		}
	}
	// 301 s: the recommendation of 4 has left the window.
	if d := a.Decide(t0.Add(301*time.Second), 4, four(0.1)); d.Desired != 1 {
		t.Errorf("at 301s: %+v, want 1", d)
	}
}

// TestScaleUpRate: after 2 → 6 at t0, a further scale up within 15 s is
// held to max(2+4, 2·2) = 6 counted from the period's start; at 16 s the
// period has passed and 6 may grow to max(6+4, 12) = 12.
func TestScaleUpRate(t *testing.T) {
	a, err := autoscale.New(autoscale.Config{Min: 1, Max: 50, Targets: cpuTarget(10), Tolerance: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	busy := func(n int) []autoscale.Replica {
		var rs []autoscale.Replica
		for i := range n {
			rs = append(rs, ready(string(rune('a'+i)), cpu(1)))
		}
		return rs
	}
	d := a.Decide(t0, 2, busy(2))
	if d.Desired != 6 {
		t.Fatalf("first: %+v", d)
	}
	a.Scaled(t0, 2, 6)
	if d := a.Decide(t0.Add(10*time.Second), 6, busy(6)); d.Desired != 6 || d.Reason != "scale-up limit" {
		t.Errorf("within 15s: %+v, want held at 6", d)
	}
	if d := a.Decide(t0.Add(16*time.Second), 6, busy(6)); d.Desired != 12 {
		t.Errorf("after 15s: %+v, want 12", d)
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []autoscale.Config{
		{Min: 0, Max: 2, Targets: cpuTarget(50)},
		{Min: 3, Max: 2, Targets: cpuTarget(50)},
		{Min: 1, Max: 2},
		{Min: 1, Max: 2, Targets: cpuTarget(0)},
		{Min: 1, Max: 2, Targets: cpuTarget(101)},
	} {
		if _, err := autoscale.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
