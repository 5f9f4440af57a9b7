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
// A quiet Sleeper (the sentinel's) makes no system call through the
// scheduler: timerfd_settime and the timerfd's non-blocking read are raw
// system calls, and the wait is the same poller's (a RawConn read). A
// system call entered the ordinary way wakes the runtime's monitor
// thread (sysmon) whenever every P is idle, so a process that does
// nothing but sleep paid for a second thread's wake-up, and its sleeps of
// up to 10 ms, on each of its own (docs/PERFORMANCE.md, "The sentinel's
// cost"). The kernel's timer and the poller's wake-up are the same either
// way; the open loop's pacer keeps the ordinary calls, whose accuracy
// against the wire is measured, in a process where sysmon is awake anyway.
//
// A Sleeper is for one goroutine at a time.
type Sleeper struct {
	f     *os.File
	rc    syscall.RawConn
	fd    int
	raw   bool
	buf   [8]byte
	errno syscall.Errno         // of the last raw read
	read  func(fd uintptr) bool // made once: no allocation per wait
	tm    *time.Timer           // fallback when the timerfd is unavailable
}

// NewSleeper returns a Sleeper; Close releases its timer.
func NewSleeper() *Sleeper { return newSleeper(false) }

// newQuietSleeper is the sentinel's Sleeper: raw system calls (above).
func newQuietSleeper() *Sleeper { return newSleeper(true) }

func newSleeper(raw bool) *Sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &Sleeper{fd: -1, tm: stoppedTimer()}
	}
	s := &Sleeper{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd, raw: raw}
	if !raw {
		return s
	}
	rc, err := s.f.SyscallConn()
	if err != nil {
		s.raw = false
		return s
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

// arm sets the timer to expire d from now.
func (s *Sleeper) arm(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	var err error
	if s.raw {
		if _, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(s.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
			err = e
		}
	} else {
		err = unix.TimerfdSettime(s.fd, 0, &spec, nil)
	}
	if err != nil {
		panic(fmt.Sprintf("hostclock: timerfd_settime: %v", err))
	}
}

// wait reads the timer's expiry, waiting in the poller until it fires.
func (s *Sleeper) wait() error {
	if !s.raw {
		_, err := s.f.Read(s.buf[:])
		return err
	}
	if err := s.rc.Read(s.read); err != nil {
		return err
	}
	if s.errno != 0 {
		return s.errno
	}
	return nil
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
		err := s.wait()
		if !stop() {
			<-done
			s.f.SetReadDeadline(time.Time{})
			return false
		}
		return err == nil
	}
	return s.wait() == nil && ctx.Err() == nil
}

// Close releases the timer.
func (s *Sleeper) Close() {
	if s.f != nil {
		s.f.Close()
	}
}
