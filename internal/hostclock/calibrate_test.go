package hostclock

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The percentiles of 1..1000 µs are known by hand: the 500th, 990th and
// 999th values. HdrHistogram at 3 digits may round up by 0.1%.
func TestSummarizeKnownValues(t *testing.T) {
	h := hdr.New(histMin, histMax, histDigits)
	for us := int64(1); us <= 1000; us++ {
		if err := h.RecordValue(us * 1000); err != nil {
			t.Fatal(err)
		}
	}
	c := summarize(h)
	for _, tc := range []struct {
		name      string
		got, want float64
	}{{"p50", c.P50Ms, 0.500}, {"p99", c.P99Ms, 0.990}, {"p99.9", c.P999Ms, 0.999}, {"max", c.MaxMs, 1.000}} {
		if math.Abs(tc.got-tc.want) > tc.want*1e-3 {
			t.Errorf("%s = %.6f ms, want %.3f ms within 0.1%%", tc.name, tc.got, tc.want)
		}
	}
	if c.Samples != 1000 {
		t.Errorf("samples = %d, want 1000", c.Samples)
	}
}

func TestCalibrateShort(t *testing.T) {
	start := time.Now()
	c, err := Calibrate(context.Background(), Options{Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 1200*time.Millisecond {
		t.Errorf("a 200 ms calibration took %v", took)
	}
	// Each wake-up costs at least its interval: at most 200 ms / 100 µs.
	if c.Samples < 10 || c.Samples > 2001 {
		t.Errorf("samples = %d, want between 10 and 2001", c.Samples)
	}
	if !(c.P50Ms <= c.P99Ms && c.P99Ms <= c.P999Ms && c.P999Ms <= c.MaxMs) {
		t.Errorf("percentiles out of order: %+v", c)
	}
	if c.P50Ms <= 0 {
		t.Errorf("p50 lateness %.6f ms: a wake-up is never on time to the ns", c.P50Ms)
	}
	if c.Method == "" || len(c.IntervalsUs) != len(DefaultIntervals) || c.GOMAXPROCS < 1 {
		t.Errorf("calibration does not say how it was made: %+v", c)
	}
	if !strings.Contains(c.String(), "p99.9") {
		t.Errorf("String() = %q", c.String())
	}
}

func TestCalibrateCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Calibrate(ctx, Options{Duration: time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCalibrateBadInterval(t *testing.T) {
	_, err := Calibrate(context.Background(), Options{Intervals: []time.Duration{0}})
	if err == nil || !strings.Contains(err.Error(), "interval") {
		t.Fatalf("err = %v, want an error naming the interval", err)
	}
}

// The Sleeper waits at least what it is asked, and a canceled context
// ends a long wait promptly; the sentinel's quiet one alike.
func TestSleeper(t *testing.T) {
	for name, mk := range map[string]func() *Sleeper{"pacer": NewSleeper, "quiet": newQuietSleeper} {
		t.Run(name, func(t *testing.T) { testSleeper(t, mk()) })
	}
}

func testSleeper(t *testing.T, s *Sleeper) {
	defer s.Close()
	for _, d := range []time.Duration{50 * time.Microsecond, time.Millisecond, 150 * time.Millisecond} {
		t0 := time.Now()
		if !s.Sleep(context.Background(), d) {
			t.Fatalf("Sleep(%v) = false", d)
		}
		if got := time.Since(t0); got < d {
			t.Errorf("Sleep(%v) returned after %v", d, got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if s.Sleep(ctx, 5*time.Second) {
		t.Error("Sleep past a canceled context returned true")
	}
	if got := time.Since(t0); got > time.Second {
		t.Errorf("canceled Sleep returned after %v", got)
	}
	// The timer is usable again after a canceled wait.
	if !s.Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep after a cancellation = false")
	}
}
