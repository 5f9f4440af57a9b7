package hostclock

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// UsableCPUs counts the CPUs the calling process may run on now: its
// affinity mask, which a cpuset entered after start narrows. The runtime's
// NumCPU was read at start, and GOMAXPROCS may be set above the cores on
// purpose (experiment.Isolation.Enter), so neither says how many cores a
// CPU-saturation check should count.
func UsableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		return runtime.NumCPU()
	}
	return set.Count()
}
