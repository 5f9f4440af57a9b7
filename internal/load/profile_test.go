package load

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// countArrivals counts arrivals in [from, to) seconds the way openLoop
// plans them.
func countArrivals(segs []segment, from, to float64, poisson bool) int {
	rng := rand.New(rand.NewPCG(1, 2))
	area, n := 0.0, 0
	for i := 0; i < 10_000_000; i++ {
		if poisson {
			area += rng.ExpFloat64()
		} else if i > 0 {
			area++
		}
		t := nextArrival(segs, 0, area)
		if t >= to {
			break
		}
		if t >= from {
			n++
		}
	}
	return n
}

func TestArrivals(t *testing.T) {
	s := func(d time.Duration) Duration { return Duration(d) }
	tests := []struct {
		name     string
		cfg      Config
		from, to float64
		want     int
		tol      int
	}{
		{"constant", Config{Rate: 100}, 0, 10, 1000, 0},
		{"poisson", Config{Rate: 100, Arrival: "poisson"}, 0, 10, 1000, 100},
		{"ramp from zero", Config{Stages: []Stage{{Type: "ramp", Duration: s(2 * time.Second), Rate: 200}}}, 0, 2, 200, 1},
		{"ramp then hold", Config{Rate: 100, Stages: []Stage{{Type: "ramp", Duration: s(time.Second), Rate: 300}}}, 0, 2, 200 + 300, 1},
		{"steps", Config{Stages: []Stage{{Type: "step", Duration: s(time.Second), Rate: 50}, {Type: "step", Duration: s(time.Second), Rate: 150}}}, 0, 2, 200, 1},
		{"warm-up at the first stage's level", Config{Warmup: s(time.Second), Stages: []Stage{{Type: "ramp", Duration: s(time.Second), Rate: 100}}}, 0, 1, 100, 1},
		{"warm-up at warmup_rate", Config{Rate: 3, Warmup: s(2 * time.Second), WarmupRate: 500}, 0, 2, 1000, 1},
		{"measurement at rate after a warmup_rate", Config{Rate: 3, Warmup: s(2 * time.Second), WarmupRate: 500}, 2, 12, 30, 1},
		{"warmup_rate over a staged start", Config{Warmup: s(time.Second), WarmupRate: 40, Stages: []Stage{{Type: "step", Duration: s(time.Second), Rate: 100}}}, 0, 2, 140, 1},
		{"down to zero", Config{Rate: 100, Stages: []Stage{{Type: "ramp", Duration: s(time.Second), Rate: 0}}}, 0, 5, 50, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			segs := profile(&tt.cfg, tt.cfg.Rate, tt.cfg.WarmupRate, func(s Stage) float64 { return s.Rate })
			got := countArrivals(segs, tt.from, tt.to, tt.cfg.Arrival == "poisson")
			if d := got - tt.want; d < -tt.tol || d > tt.tol {
				t.Fatalf("%d arrivals, want %d ± %d", got, tt.want, tt.tol)
			}
		})
	}
}

func TestLevels(t *testing.T) {
	cfg := Config{Mode: "closed", Users: 2, Stages: []Stage{
		{Type: "ramp", Duration: Duration(10 * time.Second), Users: 12},
		{Type: "step", Duration: Duration(5 * time.Second), Users: 4}}}
	segs := profile(&cfg, 2, 0, func(s Stage) float64 { return float64(s.Users) })
	for _, c := range []struct{ t, want float64 }{{0, 2}, {5, 7}, {9.99, 12}, {10, 4}, {14, 4}, {100, 4}} {
		if got := levelAt(segs, c.t); math.Abs(got-c.want) > 0.01 {
			t.Errorf("users at %gs = %g, want %g", c.t, got, c.want)
		}
	}
}
