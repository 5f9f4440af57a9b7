package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/svclab/svclab/internal/hostclock"
)

// loadCalibration is short: a one-off load run should not wait long
// before it starts, and half a second still gives over a thousand
// wake-ups for the floor its audit is judged against.
const loadCalibration = 500 * time.Millisecond

// calibrateHost measures the host timer's lateness before a load run; a
// failed calibration leaves the audit on its fixed rule.
func calibrateHost(ctx context.Context, quiet bool, stderr io.Writer) *hostclock.Calibration {
	c, err := hostclock.Calibrate(ctx, hostclock.Options{Duration: loadCalibration})
	if err != nil {
		fmt.Fprintf(stderr, "svclab load: host timer calibration: %v\n", err)
		return nil
	}
	if !quiet {
		fmt.Fprintln(stderr, c.String())
	}
	return &c
}
