package synth

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadRusage is the calling thread's user and system time from
// getrusage(RUSAGE_THREAD): the kernel's account of the thread, read
// through another interface than the clock burnCPU watches.
func threadRusage(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBurnCPU checks that cpu = d spends d of the serving thread's CPU
// time within 5%, as the thread's own rusage counts it: on a busy
// machine too, since time the thread waits preempted is not counted by
// either.
func TestBurnCPU(t *testing.T) {
	for _, d := range []time.Duration{500 * time.Microsecond, 2 * time.Millisecond, 10 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			// burnCPU locks the goroutine to its thread; locking here
			// too keeps the thread the same from one reading to the
			// next (the lock nests).
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			const rounds = 21
			var spent []time.Duration
			for range rounds {
				before := threadRusage(t)
				burnCPU(d)
				spent = append(spent, threadRusage(t)-before)
			}
			// The median round: the first of a fresh test binary once
			// spent 1.25 ms of a 500 µs burn (its pages and the clock's
			// first reads), where every other round spent 502-506 µs.
			med := slices.Sorted(slices.Values(spent))[rounds/2]
			if off := float64(med)/float64(d) - 1; off < -0.05 || off > 0.05 {
				t.Errorf("burnCPU(%v) spent %v of the thread's CPU in the median round (%.1f%% off; rounds %v), want within 5%%", d, med, 100*off, spent)
			}
		})
	}
}
