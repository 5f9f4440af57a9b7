package hostclock

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSentinelWake is the bare loop's cost per wake-up at a 5 ms gap
// (200 req/s, quickstart's rate) and at 1 ms, without rests: the
// process's CPU over the loop per wake-up (cpu-µs/wake) and as a share of
// one core (cpu-%). Run it with a fixed count, e.g. -benchtime=400x.
func BenchmarkSentinelWake(b *testing.B) {
	for _, gap := range []time.Duration{5 * time.Millisecond, time.Millisecond} {
		b.Run(gap.String(), func(b *testing.B) {
			// As SentinelMain runs it: one P.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			s := newQuietSleeper()
			defer s.Close()
			b.ReportAllocs()
			cpu0, t0 := ProcessCPU(), time.Now()
			b.ResetTimer()
			h := bareLoop(context.Background(), s, time.Now().Add(time.Duration(b.N)*gap+gap/2), MinGap, 0,
				func(int64) time.Duration { return gap })
			b.StopTimer()
			el := time.Since(t0)
			if n := h.TotalCount(); n > 0 {
				b.ReportMetric(float64((ProcessCPU()-cpu0).Microseconds())/float64(n), "cpu-µs/wake")
				b.ReportMetric(100*(ProcessCPU()-cpu0).Seconds()/el.Seconds(), "cpu-%")
			}
		})
	}
}
