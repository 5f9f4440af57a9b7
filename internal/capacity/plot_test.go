package capacity

import (
	"slices"
	"strconv"
	"testing"
)

func TestLogTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		labels []float64
	}{
		// Powers of ten suffice across several decades.
		{0.8, 12000, []float64{1, 10, 100, 1000, 10000}},
		// Under two decades: 1, 2 and 5.
		{0.3, 3, []float64{0.5, 1, 2}},
		{40, 600, []float64{50, 100, 200, 500}},
		// Within one decade, every digit: a capacity search's usual range.
		{180, 950, []float64{200, 300, 400, 500, 600, 700, 800, 900}},
		{1.5, 2.5, []float64{2}},
	} {
		var got []float64
		ticks := logTicks{}.Ticks(c.lo, c.hi)
		for _, tk := range ticks {
			if tk.Value < c.lo || tk.Value > c.hi {
				t.Errorf("[%g, %g]: tick %g outside the axis", c.lo, c.hi, tk.Value)
			}
			if tk.Label != "" {
				if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || v != tk.Value {
					t.Errorf("[%g, %g]: label %q for a tick at %g", c.lo, c.hi, tk.Label, tk.Value)
				}
				got = append(got, tk.Value)
			}
		}
		if !slices.Equal(got, c.labels) {
			t.Errorf("[%g, %g]: labelled %v, want %v", c.lo, c.hi, got, c.labels)
		}
	}
	if ticks := (logTicks{}).Ticks(0, 10); ticks != nil {
		t.Errorf("a log axis from 0: ticks %v, want none", ticks)
	}
}
