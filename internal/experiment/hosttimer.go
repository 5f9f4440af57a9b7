package experiment

import (
	"context"
	"fmt"
	"io"
	"os"

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

// sentinelExe is the svclab binary each open-loop run starts as `svclab
// hostclock --sentinel` beside its generator, in the generator's cpuset,
// for the floor of its own window (load.Options.Sentinel). Without it
// the run is judged against the calibration above, and says so.
func sentinelExe() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}
