package cli

import (
	"testing"
	"time"
)

func TestCPURates(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := cpuRates{}
	for _, s := range []struct {
		name string
		at   time.Duration // from t0
		cpu  float64       // CPU seconds so far
		want float64       // cores shown
	}{
		{"the first sample has no rate", 0, 1.0, 0},
		{"half a core over a second", time.Second, 1.5, 0.5},
		// The sample taken as the measurement ends, 5 ms after a tick,
		// with one 10 ms /proc tick more: 2 cores over 5 ms, which no
		// process used. The rate shown stays the last one.
		{"a sample too soon after the last", time.Second + 5*time.Millisecond, 1.51, 0.5},
		// The next rate is over the whole span since the last rate's sample.
		{"the next rate spans from the last one read", 2 * time.Second, 1.75, 0.25},
		{"a sample not after the last", 2 * time.Second, 2.0, 0},
		{"a counter that went back reads 0", 3 * time.Second, 1.0, 0},
	} {
		if got := r.cores("p", t0.Add(s.at), s.cpu); got != s.want {
			t.Errorf("%s: cores = %v, want %v", s.name, got, s.want)
		}
	}
}
