//go:build !linux

package hostclock

import (
	"context"
	"time"
)

// Sleeper waits with the runtime's timers, which may fire up to a
// millisecond late on an idle process; the Linux build uses a timerfd.
type Sleeper struct{ tm *time.Timer }

// NewSleeper returns a Sleeper; Close releases its timer.
func NewSleeper() *Sleeper { return &Sleeper{tm: stoppedTimer()} }

func newQuietSleeper() *Sleeper { return NewSleeper() }

// Method names the mechanism.
func (s *Sleeper) Method() string { return "runtime timer" }

// Sleep waits d, or until ctx is done (reported as false).
func (s *Sleeper) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	return timerSleep(ctx, s.tm, d)
}

// Close releases the timer.
func (s *Sleeper) Close() {}
