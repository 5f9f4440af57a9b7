//go:build !linux

package load

import (
	"context"
	"time"
)

// sleeper waits with the runtime's timers, which may fire up to a
// millisecond late on an idle process; the Linux build uses a timerfd.
type sleeper struct {
	tm *time.Timer
	// running mean and deviation of how late wake-ups are, in ns
	mean, dev int64
}

func newSleeper() *sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &sleeper{tm: t}
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	s.tm.Reset(d)
	select {
	case <-s.tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *sleeper) close() {}
