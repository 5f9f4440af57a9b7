package hostclock

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUsableCPUs follows the affinity mask, not GOMAXPROCS: narrowed to
// one CPU with GOMAXPROCS at 2, it counts one.
func TestUsableCPUs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Skipf("no affinity mask here: %v", err)
	}
	if got := UsableCPUs(); got != old.Count() {
		t.Fatalf("UsableCPUs() = %d, affinity mask has %d", got, old.Count())
	}
	first := -1
	for i := 0; i < len(old)*64 && first < 0; i++ {
		if old.IsSet(i) {
			first = i
		}
	}
	var one unix.CPUSet
	one.Set(first)
	// Thread-level affinity (pid 0 is this thread), restored before the
	// thread is unlocked.
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Skipf("cannot narrow the affinity: %v", err)
	}
	defer unix.SchedSetaffinity(0, &old)
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	if got := UsableCPUs(); got != 1 {
		t.Errorf("UsableCPUs() = %d on one CPU with GOMAXPROCS 2, want 1", got)
	}
}
