package experiment

import (
	"context"
	"fmt"
	"io"

	"github.com/svclab/svclab/internal/hostclock"
)

// calibrateHost measures this host's timer wake-up lateness before the
// first run, so that every run's generator audit is judged against what
// the host imposes rather than a fixed threshold. A host that cannot be
// calibrated (an interrupted start) gives nil: the audit then falls back
// to its fixed rule and says so.
func calibrateHost(ctx context.Context, logw io.Writer) *hostclock.Calibration {
	c, err := hostclock.Calibrate(ctx, hostclock.Options{})
	if err != nil {
		fmt.Fprintf(logw, "host timer calibration: %v\n", err)
		return nil
	}
	fmt.Fprintln(logw, c.String())
	return &c
}
