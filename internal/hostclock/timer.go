package hostclock

import (
	"context"
	"time"
)

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

func timerSleep(ctx context.Context, tm *time.Timer, d time.Duration) bool {
	tm.Reset(d)
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		tm.Stop()
		return false
	}
}
