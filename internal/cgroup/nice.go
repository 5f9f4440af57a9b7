package cgroup

import (
	"math"
	"syscall"
)

// A group's CPU weight follows the nice value of the process that makes
// it. Nice orders threads within one cgroup only: a process svclab moves
// into a group of its own competes with the rest of the machine at the
// group's weight, whatever its nice. So a svclab run at nice 19 (make test
// runs its background tests so, beside the timed ones) would put its
// hosts, a CPU-bound one among them, at full weight beside a timed test's
// system under test, which then found a third of its capacity.

// Nice is the calling thread's nice value (threads inherit the process's).
func Nice() int {
	// The system call answers 20 - nice (1 to 40); glibc's wrapper hides
	// that, Go's does not.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0
	}
	return 20 - prio
}

// NiceShares is the cgroup v1 cpu.shares of a thread at the calling
// thread's nice value (the kernel's weight: 1024 at nice 0, 1.25 times
// less a step), or 0 at nice 0 or below, where a group keeps the default.
// cgroup v2's cpu.weight is converted from it as runc does.
func NiceShares() uint64 {
	n := Nice()
	if n <= 0 {
		return 0
	}
	return uint64(max(2, math.Round(1024/math.Pow(1.25, float64(n)))))
}
