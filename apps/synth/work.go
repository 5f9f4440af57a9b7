package synth

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling OS thread has used. It makes the
// system call raw (the vDSO has no thread clock): unix.ClockGettime goes
// through the scheduler's syscall path, and a burning thread preempted
// by the kernel inside it would have its P handed to another thread by
// the runtime's monitor, and take it back after, at a cost in CPU that
// grows with the machine's load.
func threadCPU() time.Duration {
	var ts unix.Timespec
	_, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		// The thread CPU clock exists on every Linux since 2.6.12; without
		// it no work could be measured, so fail loudly rather than spin.
		panic("synth: CLOCK_THREAD_CPUTIME_ID: " + errno.Error())
	}
	return time.Duration(ts.Nano())
}

// burnSink keeps the compiler from removing the busy loop.
var burnSink atomic.Uint64

// burnChunk is how many loop iterations run between reads of the thread
// clock: about a microsecond, so the clock's system call is a small share
// of the time burnt and the overshoot is about a microsecond.
const burnChunk = 1000

// burnCPU spends d of the calling goroutine's thread's CPU time. The
// goroutine is locked to its thread meanwhile, so that the thread whose
// clock is read is the one that burns; time the thread spends preempted
// by another process does not count, which is what makes cpu = "2ms" mean
// 2 ms of CPU on a busy machine too.
func burnCPU(d time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	end := threadCPU() + d
	x := burnSink.Load() | 1
	for threadCPU() < end {
		for range burnChunk {
			// xorshift: cheap, and the compiler cannot fold it.
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	burnSink.Store(x)
}

// pageSize is the stride at which touchMemory writes: one byte a page
// makes the kernel back every page.
var pageSize = unix.Getpagesize()

// memorySink holds the last allocation's first byte, so that neither the
// allocation nor the writes can be optimised away.
var memorySink atomic.Uint32

// touchMemory allocates n bytes, writes every page of them, and lets them
// go for the garbage collector.
func touchMemory(n int) {
	if n <= 0 {
		return
	}
	b := make([]byte, n)
	for i := 0; i < n; i += pageSize {
		b[i] = byte(i)
	}
	b[n-1] = 1
	memorySink.Store(uint32(b[0]))
}
