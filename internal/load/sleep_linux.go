package load

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper waits until a moment with the precision of a kernel timer.
//
// The Go runtime parks its idle threads in epoll_wait, whose timeout has
// millisecond granularity, so time.Sleep and timers fire up to a
// millisecond late when the process is idle; an open-loop generator would
// then send on a millisecond grid, late by half a millisecond on average.
// A timerfd read through the runtime's poller wakes the scheduler as soon
// as the kernel timer expires (tens of µs), whatever epoll's timeout.
type sleeper struct {
	// running mean and deviation of how late wake-ups are, in ns
	mean, dev int64
	f         *os.File
	fd        int
	buf       [8]byte
	tm        *time.Timer // fallback when the timerfd is unavailable
}

func newSleeper() *sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &sleeper{fd: -1, tm: stoppedTimer()}
	}
	return &sleeper{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// sleep waits d, or until ctx is done (reported as false).
func (s *sleeper) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if s.f == nil {
		s.tm.Reset(d)
		select {
		case <-s.tm.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(s.fd, 0, &spec, nil); err != nil {
		panic(fmt.Sprintf("load: timerfd_settime: %v", err))
	}
	// A canceled context is noticed within one interval; arrivals are
	// at most a few seconds apart, and a long wait is cut into pieces by
	// the caller's loop.
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

func (s *sleeper) close() {
	if s.f != nil {
		s.f.Close()
	}
}
