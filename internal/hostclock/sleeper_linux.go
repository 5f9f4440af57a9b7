package hostclock

import (
	"context"
	"fmt"
	"os"
	"time"

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
// A Sleeper is for one goroutine at a time.
type Sleeper struct {
	f   *os.File
	fd  int
	buf [8]byte
	tm  *time.Timer // fallback when the timerfd is unavailable
}

// NewSleeper returns a Sleeper; Close releases its timer.
func NewSleeper() *Sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &Sleeper{fd: -1, tm: stoppedTimer()}
	}
	return &Sleeper{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
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
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(s.fd, 0, &spec, nil); err != nil {
		panic(fmt.Sprintf("hostclock: timerfd_settime: %v", err))
	}
	// A canceled context is noticed within one interval: short waits are
	// not worth a goroutine and a deadline each, and callers cut long
	// waits into pieces of at most a second.
	if ctx.Done() != nil && d > 100*time.Millisecond {
		done := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { s.f.SetReadDeadline(time.Now()); close(done) })
		_, err := s.f.Read(s.buf[:])
		if !stop() {
			<-done
			s.f.SetReadDeadline(time.Time{})
			return false
		}
		return err == nil
	}
	_, err := s.f.Read(s.buf[:])
	return err == nil && ctx.Err() == nil
}

// Close releases the timer.
func (s *Sleeper) Close() {
	if s.f != nil {
		s.f.Close()
	}
}
