package hostclock

import (
	"context"
	"fmt"
	"runtime"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Calibration is how late a bare sleep-to-deadline loop woke up on this
// host: the "host_timer" object of experiment.json and of a load run.
// Lateness is in milliseconds.
type Calibration struct {
	Method    string  `json:"method"`
	Samples   int64   `json:"samples"`
	DurationS float64 `json:"duration_s"`
	// IntervalsUs are the waits asked, in turn, in µs.
	IntervalsUs []float64 `json:"intervals_us"`
	// GOMAXPROCS is how many cores the process that measured could use.
	GOMAXPROCS int     `json:"gomaxprocs"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	P999Ms     float64 `json:"p999_ms"`
	MaxMs      float64 `json:"max_ms"`
	// hist is the lateness histogram (ns) the figures were read from,
	// when this process measured or decoded it; a Calibration read back
	// from JSON has none.
	hist *hdr.Histogram
}

// Histogram is the lateness histogram in ns the figures come from, nil
// when not known (a Calibration read from a file): what a send lag's
// confidence interval is compared with.
func (c *Calibration) Histogram() *hdr.Histogram {
	if c == nil {
		return nil
	}
	return c.hist
}

// Options shape a calibration.
type Options struct {
	// Duration bounds the loop; 0 means DefaultDuration.
	Duration time.Duration
	// Intervals are the waits asked, in turn; nil means DefaultIntervals.
	Intervals []time.Duration
}

// DefaultDuration is long enough for a few thousand wake-ups, short
// enough to run before every experiment.
const DefaultDuration = 1500 * time.Millisecond

// DefaultIntervals span the gaps between arrivals of an open loop at
// 10,000, about 3,000 and 1,000 requests per second: a virtual CPU that
// idles longer may sleep deeper and wake later, so the floor covers the
// lengths a generator actually asks for.
var DefaultIntervals = []time.Duration{100 * time.Microsecond, 300 * time.Microsecond, time.Millisecond}

// lateness histogram bounds, in ns: 1 ns to 10 s at 3 significant digits.
const (
	histMin    = 1
	histMax    = int64(10 * time.Second)
	histDigits = 3
)

// Calibrate runs the bare loop on the calling goroutine: ask to wake at
// now+interval, note how late the wake-up came, repeat, for opt.Duration.
// It is what the host imposes on any sender that sleeps between sends:
// nothing runs in the loop but the wait and two clock reads.
func Calibrate(ctx context.Context, opt Options) (Calibration, error) {
	d := opt.Duration
	if d <= 0 {
		d = DefaultDuration
	}
	iv := opt.Intervals
	if len(iv) == 0 {
		iv = DefaultIntervals
	}
	for _, v := range iv {
		if v <= 0 || v > time.Second {
			return Calibration{}, fmt.Errorf("hostclock: interval %v: must be in (0, 1s]", v)
		}
	}
	s := NewSleeper()
	defer s.Close()
	start := time.Now()
	h := bareLoop(ctx, s, start.Add(d), minDuration(iv), 0, func(n int64) time.Duration { return iv[n%int64(len(iv))] })
	if h.TotalCount() == 0 {
		if err := ctx.Err(); err != nil {
			return Calibration{}, fmt.Errorf("hostclock: calibration interrupted: %w", err)
		}
		return Calibration{}, fmt.Errorf("hostclock: calibration took no sample in %v", d)
	}
	c := summarize(h)
	c.Method = s.Method()
	c.DurationS = time.Since(start).Seconds()
	c.GOMAXPROCS = runtime.GOMAXPROCS(0)
	for _, v := range iv {
		c.IntervalsUs = append(c.IntervalsUs, float64(v)/1e3)
	}
	return c, nil
}

// bareLoop is the loop itself: ask to wake after wait(n), note how late
// the wake-up came, and, when rest is longer than the wait, rest the
// difference unmeasured; until end, or ctx ends. It is bounded in time by
// end and in count by shortest, the least wait(n) returns.
func bareLoop(ctx context.Context, s *Sleeper, end time.Time, shortest, rest time.Duration, wait func(n int64) time.Duration) *hdr.Histogram {
	h := hdr.New(histMin, histMax, histDigits)
	maxN := int64(time.Until(end)/shortest) + 1
	for n := int64(0); n < maxN; n++ {
		w := wait(n)
		asked := time.Now()
		if !asked.Add(w).Before(end) {
			break
		}
		if !s.Sleep(ctx, w) {
			break
		}
		late := time.Since(asked) - w
		h.RecordValue(min(max(int64(late), histMin), histMax))
		if w < rest && !s.Sleep(ctx, rest-w) {
			break
		}
	}
	return h
}

func minDuration(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = min(m, d)
	}
	return m
}

// FromHistogram is the calibration a lateness histogram in ns gives: its
// percentiles, and the histogram kept for the audit's intervals.
func FromHistogram(h *hdr.Histogram) Calibration { return summarize(h) }

// summarize reads the percentiles of a lateness histogram in ns.
func summarize(h *hdr.Histogram) Calibration {
	v := h.ValueAtPercentiles([]float64{50, 99, 99.9})
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return Calibration{Samples: h.TotalCount(), P50Ms: ms(v[50]), P99Ms: ms(v[99]),
		P999Ms: ms(v[99.9]), MaxMs: ms(h.Max()), hist: h}
}

// String is the one line a person reads before a run.
func (c Calibration) String() string {
	return fmt.Sprintf("host timer (%s, %d wake-ups in %.1fs): late p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms",
		c.Method, c.Samples, c.DurationS, c.P50Ms, c.P99Ms, c.P999Ms, c.MaxMs)
}
