package load

import "math"

// segment is a stretch of the load profile over which the level (rate or
// users) changes linearly from `from` to `to`. Times are seconds since the
// run's base time; the last segment has end = +Inf.
type segment struct {
	start, end float64
	from, to   float64
}

// profile lays out the level over time: the warm-up at warmLevel (0: the
// starting level), then each stage, then the last level held to the end.
func profile(cfg *Config, level, warmLevel float64, stageLevel func(Stage) float64) []segment {
	warm := cfg.Warmup.D().Seconds()
	start := level
	if start == 0 && len(cfg.Stages) > 0 {
		// A warm-up at level 0 would warm nothing up.
		start = stageLevel(cfg.Stages[0])
	}
	if warmLevel > 0 {
		start = warmLevel
	}
	var segs []segment
	if warm > 0 {
		segs = append(segs, segment{0, warm, start, start})
	}
	t, cur := warm, level
	for _, s := range cfg.Stages {
		d := s.Duration.D().Seconds()
		to := stageLevel(s)
		from := cur
		if s.Type == "step" {
			from = to
		}
		segs = append(segs, segment{t, t + d, from, to})
		t, cur = t+d, to
	}
	return append(segs, segment{t, math.Inf(1), cur, cur})
}

// levelAt is the level at time t (seconds since base).
func levelAt(segs []segment, t float64) float64 {
	for _, s := range segs {
		if t < s.end {
			if s.from == s.to || math.IsInf(s.end, 1) {
				return s.to
			}
			return s.from + (s.to-s.from)*(t-s.start)/(s.end-s.start)
		}
	}
	return segs[len(segs)-1].to
}

// nextArrival returns the time after t at which the integral of the rate
// reaches x: x = 1 gives evenly spaced arrivals, x drawn from Exp(1) a
// Poisson process. Integrating, rather than stepping by 1/rate(t), keeps
// a ramp that starts at 0 from stalling. It returns +Inf when the rate
// stays 0 for the rest of the profile.
func nextArrival(segs []segment, t, x float64) float64 {
	for _, s := range segs {
		if t >= s.end {
			continue
		}
		if t < s.start {
			t = s.start
		}
		ra := s.from
		k := 0.0
		if !math.IsInf(s.end, 1) && s.end > s.start {
			k = (s.to - s.from) / (s.end - s.start)
			ra = s.from + k*(t-s.start)
		}
		// area left in this segment
		span := s.end - t
		area := math.Inf(1)
		if !math.IsInf(span, 1) {
			area = ra*span + k/2*span*span
		}
		if area < x {
			x -= area
			t = s.end
			continue
		}
		var d float64
		if math.Abs(k) < 1e-12 {
			if ra <= 0 {
				return math.Inf(1)
			}
			d = x / ra
		} else {
			disc := ra*ra + 2*k*x
			if disc < 0 {
				disc = 0
			}
			d = (-ra + math.Sqrt(disc)) / k
		}
		return t + d
	}
	return math.Inf(1)
}

func secs(ns int64) float64 { return float64(ns) / 1e9 }
func nanos(s float64) int64 { return int64(s * 1e9) }
