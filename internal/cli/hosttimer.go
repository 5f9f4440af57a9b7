package cli

import (
	"context"
	"io"
	"time"

	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/hostclock"
)

// loadCalibration is short: a one-off load run should not wait long
// before it starts, and half a second still gives over a thousand
// wake-ups for the floor its audit is judged against.
const loadCalibration = 500 * time.Millisecond

// calibrateHost measures the host timer's lateness before a load run or a
// capacity search (experiment.CalibrateHost).
func calibrateHost(ctx context.Context, quiet bool, stderr io.Writer) *hostclock.Calibration {
	return experiment.CalibrateHost(ctx, hostclock.Options{Duration: loadCalibration}, stderr, "svclab load: ", quiet)
}
