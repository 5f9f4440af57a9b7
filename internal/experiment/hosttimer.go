package experiment

import (
	"context"
	"fmt"
	"io"

	"github.com/svclab/svclab/internal/hostclock"
)

// CalibrateHost measures this host's timer wake-up lateness
// (hostclock.Calibrate with opts) before load is sent, so that the
// generator's audit is judged against what the host imposes rather than a
// fixed threshold, and writes it to log unless quiet. A host that cannot be
// calibrated (an interrupted start) gives nil, said on log after prefix:
// the audit then falls back to its fixed rule and says so.
func CalibrateHost(ctx context.Context, opts hostclock.Options, log io.Writer, prefix string, quiet bool) *hostclock.Calibration {
	c, err := hostclock.Calibrate(ctx, opts)
	if err != nil {
		fmt.Fprintf(log, "%shost timer calibration: %v\n", prefix, err)
		return nil
	}
	if !quiet {
		fmt.Fprintln(log, c.String())
	}
	return &c
}

// calibrateHost is CalibrateHost before an experiment's first run.
func calibrateHost(ctx context.Context, logw io.Writer) *hostclock.Calibration {
	return CalibrateHost(ctx, hostclock.Options{}, logw, "", false)
}
