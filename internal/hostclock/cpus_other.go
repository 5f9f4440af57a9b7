//go:build !linux

package hostclock

import "runtime"

// UsableCPUs is the runtime's CPU count where no affinity mask is read.
func UsableCPUs() int { return runtime.NumCPU() }
