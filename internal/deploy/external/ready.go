package external

import (
	"context"
	"fmt"
	"time"

	"github.com/svclab/svclab/internal/deploy/probe"
)

// waitReady polls k's ready check until it passes or timeout ends, and
// then says what the last check found.
func waitReady(ctx context.Context, k *Keys, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := probeOf(k)
	if err := p.Wait(ctx); err != nil {
		return fmt.Errorf("%s is not ready after %s (deploy.start_timeout): %s: %w", k.URL, timeout, p, err)
	}
	return nil
}

// probeOf is k's ready check.
func probeOf(k *Keys) probe.Probe {
	return probe.Probe{Protocol: k.protocol, Addr: k.hostport, Check: k.Ready, URL: k.Target()}
}
