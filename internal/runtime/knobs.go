package runtime

import (
	"context"
	"log"
	"time"

	"google.golang.org/grpc/status"
)

// Sleep implements the apps' sleep_micros test knob: it waits micros
// microseconds, or until ctx ends. When ctx ends first it logs, on the
// host's stderr, that component saw the cancellation and whether the
// request carried a deadline, so a test can check that a deadline set at the
// entry reached this hop; it then returns the context's error as a gRPC
// status.
func Sleep(ctx context.Context, component string, micros int64) error {
	if micros <= 0 {
		return nil
	}
	deadline, hasDeadline := ctx.Deadline()
	start := time.Now()
	t := time.NewTimer(time.Duration(micros) * time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		left := "none"
		if hasDeadline {
			left = deadline.Sub(start).Round(time.Microsecond).String()
		}
		log.Printf("%s: sleep of %dµs cut short after %s by %v (deadline on arrival: %s)",
			component, micros, time.Since(start).Round(time.Microsecond), ctx.Err(), left)
		return status.FromContextError(ctx.Err()).Err()
	}
}

// CutShortMarker is the text Sleep logs when a request's context ends during
// the sleep; tests look for it in a host's stderr.
const CutShortMarker = "cut short after"
