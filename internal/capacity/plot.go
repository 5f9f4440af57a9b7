package capacity

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot draws latency (p50 and p99 of each step) against offered load, on
// log axes, with each latency SLO as a dashed line and the answer and the
// lowest failing rate as vertical lines, and saves it as a PNG at path.
// Passing steps are filled, failing ones hollow.
func Plot(f *File, path string) error {
	if len(f.Steps) == 0 {
		return fmt.Errorf("plot %s: no steps to draw", path)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("capacity: %s/s (%s)", FormatRate(f.Rate), f.StopReason)
	p.X.Label.Text = "offered load (requests/s); filled: step passed, hollow: step failed"
	p.Y.Label.Text = "latency (ms, from the intended send)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true

	// Log axes cannot show 0: a step with no answers sits at the floor.
	lo, hi := math.Inf(1), 0.0
	for _, s := range f.Steps {
		for _, v := range []float64{s.Latency.P50Ms, s.Latency.P99Ms} {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	for _, l := range sloLines(f) {
		lo, hi = min(lo, l.v), max(hi, l.v)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0.1, 1
	}
	floor := lo / 2
	clip := func(v float64) float64 { return max(v, floor) }

	blue := color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange := color.RGBA{R: 255, G: 127, B: 14, A: 255}
	for _, series := range []struct {
		name  string
		value func(Step) float64
		color color.Color
		shape draw.GlyphDrawer
		open  draw.GlyphDrawer
	}{
		{"p50", func(s Step) float64 { return s.Latency.P50Ms }, blue, draw.CircleGlyph{}, draw.RingGlyph{}},
		{"p99", func(s Step) float64 { return s.Latency.P99Ms }, orange, draw.PyramidGlyph{}, draw.TriangleGlyph{}},
	} {
		var pass, fail plotter.XYs
		for _, s := range f.Steps {
			pt := plotter.XY{X: s.Rate, Y: clip(series.value(s))}
			if s.Pass {
				pass = append(pass, pt)
			} else {
				fail = append(fail, pt)
			}
		}
		for i, set := range []struct {
			pts   plotter.XYs
			shape draw.GlyphDrawer
		}{{pass, series.shape}, {fail, series.open}} {
			if len(set.pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(set.pts)
			if err != nil {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: series.color, Radius: vg.Points(3), Shape: set.shape}
			p.Add(sc)
			if i == 0 || len(pass) == 0 {
				p.Legend.Add(series.name, sc)
			}
		}
	}

	rates := make([]float64, 0, len(f.Steps))
	for _, s := range f.Steps {
		rates = append(rates, s.Rate)
	}
	xmin, xmax := slices.Min(rates)/1.2, slices.Max(rates)*1.2
	ymin, ymax := floor/1.2, hi*1.5
	for _, l := range sloLines(f) {
		line, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: l.v}, {X: xmax, Y: l.v}})
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		line.Color = color.RGBA{R: 214, G: 39, B: 40, A: 255}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("SLO %s = %g", l.key, l.v), line)
	}
	vertical := func(x float64, label string, c color.Color, dashes []vg.Length) error {
		line, err := plotter.NewLine(plotter.XYs{{X: x, Y: ymin}, {X: x, Y: ymax}})
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		line.Color = c
		line.Dashes = dashes
		p.Add(line)
		p.Legend.Add(label, line)
		return nil
	}
	if f.Rate > 0 {
		if err := vertical(f.Rate, fmt.Sprintf("capacity %s/s", FormatRate(f.Rate)), color.RGBA{R: 44, G: 160, B: 44, A: 255}, nil); err != nil {
			return err
		}
	}
	if f.Interval.High != nil {
		if err := vertical(*f.Interval.High, fmt.Sprintf("lowest failing %s/s", FormatRate(*f.Interval.High)), color.Gray{Y: 120}, []vg.Length{vg.Points(2), vg.Points(2)}); err != nil {
			return err
		}
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xmin, xmax, ymin, ymax
	if err := p.Save(18*vg.Centimeter, 12*vg.Centimeter, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// sloLines are the latency limits on all requests together.
func sloLines(f *File) []limit {
	if f.SLOs == nil {
		return nil
	}
	var out []limit
	for _, l := range limitsSet(f.SLOs.Limits) {
		if strings.HasSuffix(l.key, "_ms") && l.v > 0 {
			out = append(out, l)
		}
	}
	return out
}

// logTicks marks a log axis at 1, 2 and 5 or at every digit of each decade
// when powers of ten alone would label fewer than three ticks: a search
// between 200 and 900 requests/s spans no power of ten, and plot.LogTicks
// would leave that axis without a number.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	first, last := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	marks := func(labelled []int) ([]plot.Tick, int) {
		var ticks []plot.Tick
		n := 0
		for k := first; k <= last; k++ {
			for m := 1; m <= 9; m++ {
				v := float64(m) * math.Pow(10, float64(k))
				if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
					continue
				}
				t := plot.Tick{Value: v}
				if slices.Contains(labelled, m) {
					t.Label = strconv.FormatFloat(v, 'f', -1, 64)
					n++
				}
				ticks = append(ticks, t)
			}
		}
		return ticks, n
	}
	var ticks []plot.Tick
	for _, labelled := range [][]int{{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		var n int
		if ticks, n = marks(labelled); n >= 3 {
			break
		}
	}
	return ticks
}
