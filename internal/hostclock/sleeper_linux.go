package hostclock

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sleeper waits until a moment with the precision of a kernel timer.
//
// The Go runtime parks its idle threads in epoll_wait, whose timeout has
// millisecond granularity, so time.Sleep and timers fire up to a
// millisecond late when the process is idle; an open-loop generator would
// then send on a millisecond grid, late by half a millisecond on average.
// A timerfd read through the runtime's poller wakes the scheduler as soon
// as the kernel timer expires (tens of µs), whatever epoll's timeout.
//
// Each wake-up makes no system call through the scheduler: timerfd_settime
// and the timerfd's non-blocking read are raw system calls, and the wait
// itself is the runtime's poller (a RawConn read). A system call entered
// the ordinary way wakes the runtime's monitor thread (sysmon) whenever
// every P is idle, so a loop that sleeps most of the time paid for a
// second thread's wake-up, and its sleep of up to 10 ms, on each of its
// own (docs/PERFORMANCE.md, "The sentinel's cost").
//
// A Sleeper is for one goroutine at a time.
type Sleeper struct {
	f     *os.File
	rc    syscall.RawConn
	fd    int
	buf   [8]byte
	errno syscall.Errno         // of the last read
	read  func(fd uintptr) bool // made once: no allocation per wait
	tm    *time.Timer           // fallback when the timerfd is unavailable
}

// NewSleeper returns a Sleeper; Close releases its timer.
func NewSleeper() *Sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &Sleeper{fd: -1, tm: stoppedTimer()}
	}
	s := &Sleeper{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
	rc, err := s.f.SyscallConn()
	if err != nil {
		s.f.Close()
		return &Sleeper{fd: -1, tm: stoppedTimer()}
	}
	s.rc = rc
	s.read = func(fd uintptr) bool {
		// The expiry count; EAGAIN until the timer fires, when the
		// poller waits for it to be readable.
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&s.buf[0])), uintptr(len(s.buf)))
		s.errno = e
		return e != unix.EAGAIN && e != unix.EINTR
	}
	return s
}

// arm sets the timer to expire d from now, with a raw system call (see
// Sleeper).
func (s *Sleeper) arm(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(s.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if e != 0 {
		panic(fmt.Sprintf("hostclock: timerfd_settime: %v", e))
	}
}

// Method names the mechanism: "timerfd", or "runtime timer" where the
// kernel refused a timerfd.
func (s *Sleeper) Method() string {
	if s.f == nil {
		return "runtime timer"
	}
	return "timerfd"
}

// Sleep waits d, or until ctx is done (reported as false).
func (s *Sleeper) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if s.f == nil {
		return timerSleep(ctx, s.tm, d)
	}
	s.arm(d)
	// A canceled context is noticed within one interval: short waits are
	// not worth a goroutine and a deadline each, and callers cut long
	// waits into pieces of at most a second.
	if ctx.Done() != nil && d > 100*time.Millisecond {
		done := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { s.f.SetReadDeadline(time.Now()); close(done) })
		err := s.rc.Read(s.read)
		if !stop() {
			<-done
			s.f.SetReadDeadline(time.Time{})
			return false
		}
		return err == nil && s.errno == 0
	}
	err := s.rc.Read(s.read)
	return err == nil && s.errno == 0 && ctx.Err() == nil
}

// Close releases the timer.
func (s *Sleeper) Close() {
	if s.f != nil {
		s.f.Close()
	}
}
