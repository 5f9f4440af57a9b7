package load

import (
	"slices"
	"testing"
)

func TestThresholdsCheck(t *testing.T) {
	sum := Summary{Operations: []Operation{
		{Name: "total", Count: 100, Errors: 2, CompletedRPS: 95, Latency: Stats{P50Ms: 2, P99Ms: 40, MaxMs: 90, MeanMs: 3}},
		{Name: "GET /cart", Count: 60, Errors: 0, CompletedRPS: 57, Latency: Stats{P50Ms: 1, P99Ms: 10}},
		{Name: "POST /pay", Count: 40, Errors: 2, CompletedRPS: 38, Latency: Stats{P50Ms: 5, P99Ms: 60}},
	}}
	tests := []struct {
		name string
		th   *Thresholds
		want []string
	}{
		{"none", nil, nil},
		{"all hold", &Thresholds{Limits: Limits{P99Ms: ptr(50.0), ErrorRate: ptr(0.05), MinRPS: ptr(90.0)}}, nil},
		{"at the limit holds", &Thresholds{Limits: Limits{P99Ms: ptr(40.0), ErrorRate: ptr(0.02)}}, nil},
		{"total p99", &Thresholds{Limits: Limits{P99Ms: ptr(30.0)}}, []string{"total: p99_ms 40 > 30"}},
		{"every kind", &Thresholds{Limits: Limits{P50Ms: ptr(1.0), MaxMs: ptr(50.0), MeanMs: ptr(2.5), ErrorRate: ptr(0.0), MinRPS: ptr(100.0)}},
			[]string{"total: p50_ms 2 > 1", "total: max_ms 90 > 50", "total: mean_ms 3 > 2.5", "total: error_rate 0.02 > 0", "total: min_rps 95 < 100"}},
		{"per operation", &Thresholds{Operations: map[string]Limits{
			"POST /pay": {P99Ms: ptr(50.0), ErrorRate: ptr(0.01)},
			"GET /cart": {P99Ms: ptr(50.0)},
		}}, []string{"POST /pay: p99_ms 60 > 50", "POST /pay: error_rate 0.05 > 0.01"}},
		{"missing operation", &Thresholds{Operations: map[string]Limits{"GET /gone": {P99Ms: ptr(1.0)}}},
			[]string{"GET /gone: no such operation in this run, so its thresholds cannot hold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, b := range tt.th.Check(sum) {
				got = append(got, b.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("breaches %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestThresholdStates: every threshold set, in Check's order, with its
// state from Check; a summary so far leaves an operation it lacks pending,
// a final one breaks it.
func TestThresholdStates(t *testing.T) {
	th := &Thresholds{Limits: Limits{P99Ms: ptr(30.0), MinRPS: ptr(90.0)},
		Operations: map[string]Limits{"GET /cart": {P50Ms: ptr(1.0)}}}
	total := Summary{Operations: []Operation{{Name: "total", Count: 100, CompletedRPS: 95, Latency: Stats{P99Ms: 40}}}}
	full := Summary{Operations: append(slices.Clone(total.Operations), Operation{Name: "GET /cart", Latency: Stats{P50Ms: 0.5}})}
	tests := []struct {
		name  string
		s     Summary
		final bool
		want  []string
	}{
		{"so far, the total only", total, false, []string{"total: p99_ms <= 30 broken", "total: min_rps >= 90 holds", "GET /cart: p50_ms <= 1 pending"}},
		{"final, an operation missing", total, true, []string{"total: p99_ms <= 30 broken", "total: min_rps >= 90 holds", "GET /cart: p50_ms <= 1 broken"}},
		{"final, every operation", full, true, []string{"total: p99_ms <= 30 broken", "total: min_rps >= 90 holds", "GET /cart: p50_ms <= 1 holds"}},
		{"nothing measured yet", Summary{}, false, []string{"total: p99_ms <= 30 pending", "total: min_rps >= 90 pending", "GET /cart: p50_ms <= 1 pending"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range th.States(tt.s, tt.final) {
				got = append(got, s.String()+" "+s.State)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("states %q\nwant %q", got, tt.want)
			}
		})
	}
}
