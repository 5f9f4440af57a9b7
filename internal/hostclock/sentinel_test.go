package hostclock

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestClampGap(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{time.Microsecond, MinGap}, {MinGap, MinGap}, {5 * time.Millisecond, 5 * time.Millisecond},
		{MaxGap, MaxGap}, {time.Second, MaxGap},
	} {
		if got := ClampGap(tc.in); got != tc.want {
			t.Errorf("ClampGap(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// restFor rests only where it saves wake-ups: a measured wait and its
// rest are two, so the period must be over twice the gap; the period is
// the window over sentinelSamples, at least restPeriod.
func TestRestFor(t *testing.T) {
	for _, tc := range []struct{ gap, d, want time.Duration }{
		{100 * time.Microsecond, 6 * time.Second, 6 * time.Millisecond}, // 2 wake-ups per 6 ms, not 60
		{time.Millisecond, 400 * time.Millisecond, restPeriod},          // a short window: restPeriod
		{5 * time.Millisecond, 6 * time.Second, 0},                      // quickstart: 200/s, resting would make 333/s
		{3 * time.Millisecond, 6 * time.Second, 0},                      // 6 ms ≤ 2 × 3 ms
		{5 * time.Millisecond, 60 * time.Second, 60 * time.Millisecond}, // a long window: 1,000 samples, 33 wake-ups/s
		{10 * time.Millisecond, 10 * time.Second, 0},                    // 1,000 samples without resting
	} {
		if got := restFor(tc.gap, tc.d); got != tc.want {
			t.Errorf("restFor(%v, %v) = %v, want %v", tc.gap, tc.d, got, tc.want)
		}
	}
}

// A sentinel waits for its window, asks the gap it is given (clamped),
// rests as restFor says, and its report's
// histogram reads back to the figures it reports.
func TestSentinelWindow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gap     time.Duration
		poisson bool
		wantUs  float64
	}{
		{"short gap rests", 50 * time.Microsecond, false, 100},
		{"long gap", 20 * time.Millisecond, false, 10000},
		{"poisson", time.Millisecond, true, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const d = 400 * time.Millisecond
			start := time.Now().Add(150 * time.Millisecond)
			w, err := Sentinel(context.Background(), SentinelOptions{Gap: tc.gap, Poisson: tc.poisson, StartAt: start, Duration: d})
			if err != nil {
				t.Fatal(err)
			}
			// It stops before a wait that would end past the window.
			if took := time.Since(start); took < d-MaxGap || took > d+time.Second {
				t.Errorf("window ended %v after its start, want within %v of %v", took, MaxGap, d)
			}
			// Each measured wake-up costs at least max(gap, its rest).
			most := int64(d/max(ClampGap(tc.gap), restFor(ClampGap(tc.gap), d))) + 1
			if w.Samples < 5 || w.Samples > most {
				t.Errorf("samples = %d, want between 5 and %d", w.Samples, most)
			}
			if len(w.IntervalsUs) != 1 || w.IntervalsUs[0] != tc.wantUs || w.Poisson != tc.poisson {
				t.Errorf("intervals %v poisson %v, want [%v] %v", w.IntervalsUs, w.Poisson, tc.wantUs, tc.poisson)
			}
			if !strings.HasSuffix(w.Method, "sentinel") || w.CPUPercent <= 0 {
				t.Errorf("method %q cpu %v", w.Method, w.CPUPercent)
			}
			c, err := w.Summary()
			if err != nil {
				t.Fatal(err)
			}
			if c.Samples != w.Samples || c.P99Ms != w.P99Ms || c.P999Ms != w.P999Ms || c.MaxMs != w.MaxMs {
				t.Errorf("histogram reads %+v, report says %+v", c, w.Calibration)
			}
		})
	}
}

// The command line SentinelArgs makes is the one SentinelMain reads, and
// its report is one JSON line.
func TestSentinelMain(t *testing.T) {
	args := SentinelArgs(SentinelOptions{Gap: 2 * time.Millisecond, Duration: 200 * time.Millisecond, StartAt: time.Now(), Poisson: true})
	if args[0] != "hostclock" {
		t.Fatalf("args %v do not start with the command", args)
	}
	var out bytes.Buffer
	if err := SentinelMain(context.Background(), args[1:], &out); err != nil {
		t.Fatal(err)
	}
	var w Window
	if err := json.Unmarshal(out.Bytes(), &w); err != nil || w.Samples == 0 || !w.Poisson || w.Histogram == "" {
		t.Fatalf("report %q: %+v (%v)", out.String(), w, err)
	}
	for _, bad := range [][]string{
		{"--gap", "1ms", "--duration", "1s"},                      // not --sentinel
		{"--sentinel", "--gap", "1ms"},                            // no duration
		{"--sentinel", "--duration", "1s"},                        // no gap
		{"--sentinel", "--gap", "1ms", "--duration", "48h"},       // too long
		{"--sentinel", "--gap", "fast", "--duration", "1s"},       // not a duration
		{"--sentinel", "--gap", "1ms", "--duration", "1s", "now"}, // stray argument
	} {
		if err := SentinelMain(context.Background(), bad, &out); err == nil {
			t.Errorf("SentinelMain(%q) = nil, want an error", bad)
		}
	}
}

// A canceled sentinel reports what it measured so far.
func TestSentinelCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	w, err := Sentinel(ctx, SentinelOptions{Gap: time.Millisecond, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 2*time.Second || w.Samples == 0 {
		t.Errorf("canceled after %v with %d samples", took, w.Samples)
	}
}
