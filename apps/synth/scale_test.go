package synth_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// TestScale measures how a generated topology deploys as it grows: the
// time from Deploy to ready and each host's memory (RSS and PSS), split for
// 10, 30 and 100 services and in one process for 1,000, at ready and
// after 100 requests through each. It runs only with SVCLAB_SYNTH_SCALE=1,
// as it takes the machine for a minute (docs/PERFORMANCE.md, "Synth
// topologies at scale").
func TestScale(t *testing.T) {
	if os.Getenv("SVCLAB_SYNTH_SCALE") == "" {
		t.Skip("set SVCLAB_SYNTH_SCALE=1 to measure")
	}
	for _, tc := range []struct {
		services  int
		placement string
	}{{10, "split"}, {30, "split"}, {100, "split"}, {1000, "monolith"}} {
		t.Run(fmt.Sprintf("%d-%s", tc.services, tc.placement), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			start := time.Now()
			d := up(t, ctx, scaleSpec(tc.services, tc.placement))
			ready := time.Since(start)
			atReady := hostMemory(t, ctx, d)
			invoke(t, ctx, d, 100)
			t.Logf("%d services %s: ready in %v; at ready %s; after 100 requests %s",
				tc.services, tc.placement, ready.Round(time.Millisecond), atReady, hostMemory(t, ctx, d))
		})
	}
}

// scaleSpec is the generated topology of TestScale and TestHostMemory:
// services services (Barabási–Albert, m = 1), 50 µs of CPU and a 100-byte
// answer each, probability 0.2 per edge, over grpc, in placement.
func scaleSpec(services int, placement string) string {
	return fmt.Sprintf(`[app]
name = "synth"
[app.graph]
kind = "barabasi_albert"
services = %d
m = 1
seed = 1
work = { cpu = "50us" }
response = "100B"
probability = "0.2"
[deploy]
transport = "grpc"
placement = %q
start_timeout = "5m"
`, services, placement)
}

// invoke sends n of the topology's first request through d, one at a
// time.
func invoke(t *testing.T, ctx context.Context, d deploy.Deployment, n int) {
	t.Helper()
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := d.Topology().Requests()[0]
	for range n {
		if _, err := req.Invoke(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
}

// hostMemory is the number of hosts and their RSS and PSS, min, median
// and max, in MiB.
func hostMemory(t *testing.T, ctx context.Context, d deploy.Deployment) string {
	t.Helper()
	var rss, pss []float64
	for _, p := range d.Processes() {
		if p.Info().Role != deploy.RoleHost {
			continue
		}
		u, err := p.Resources().Sample(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rss = append(rss, float64(u.RSSBytes)/(1<<20))
		pss = append(pss, float64(u.PSSBytes)/(1<<20))
	}
	slices.Sort(rss)
	slices.Sort(pss)
	return fmt.Sprintf("%d hosts, RSS min %.1f MiB, median %.1f, max %.1f; PSS min %.1f, median %.1f, max %.1f",
		len(rss), rss[0], rss[len(rss)/2], rss[len(rss)-1], pss[0], pss[len(pss)/2], pss[len(pss)-1])
}
