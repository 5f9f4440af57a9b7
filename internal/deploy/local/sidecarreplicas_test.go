package local_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
)

// TestSidecarReplicas deploys chain with hop1 (the entry) and hop2 in 2
// replicas each behind proxies: every replica gets its own sidecar (or
// the node proxy a listener per replica), the client's calls spread over
// the entry's replicas' proxies, and hop1's over hop2's, each replica
// within ±20% of an even share; Scale is refused for a node proxy.
func TestSidecarReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ sidecar, mode, tr string }{
		{"envoy", "sidecar", "grpc"}, {"nginx", "sidecar", "http"}, {"envoy", "node", "grpc"},
	} {
		t.Run(tc.sidecar+"/"+tc.mode+"/"+tc.tr, func(t *testing.T) {
			proxyOrSkip(t, tc.sidecar)
			p := resolve(t, fmt.Sprintf("[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = %q\nsidecar = %q\nproxy_mode = %q\n[deploy.replicas]\nhop1 = 2\nhop2 = 2\n", tc.tr, tc.sidecar, tc.mode))
			ctx, d := deployFor(t, p)
			var proxies []string
			for _, pr := range d.Processes() {
				if pr.Info().Role != deploy.RoleHost {
					proxies = append(proxies, pr.Info().Name)
				}
			}
			want := fmt.Sprintf("hop1#0.%[1]s hop1#1.%[1]s hop2#0.%[1]s hop2#1.%[1]s hop3.%[1]s", tc.sidecar)
			if tc.mode == "node" {
				want = "node." + tc.sidecar
			}
			if got := strings.Join(proxies, " "); got != want {
				t.Errorf("proxies %q, want %q", got, want)
			}
			if tc.mode == "node" {
				// A node proxy has a listener per replica it
				// started with (sidecarproxies_test.go scales the others).
				if err := d.Scale(ctx, "hop2", 3); err == nil || !strings.Contains(err.Error(), "scaling with sidecars needs") {
					t.Errorf("Scale with %s sidecars in %s mode: %v, want it refused", tc.sidecar, tc.mode, err)
				}
			}
			conn := dialEntry(t, ctx, d)
			// A fixed count of calls, not a duration: a proxied call
			// can take tens of milliseconds on a loaded machine.
			const workers, each = 4, 10
			req := p.Requests()[0]
			var wg sync.WaitGroup
			var mu sync.Mutex
			var errs []string
			start := time.Now()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
						if _, err := req.Invoke(cctx, conn); err != nil {
							mu.Lock()
							errs = append(errs, fmt.Sprintf("after %s: %v", time.Since(start).Round(time.Millisecond), err))
							mu.Unlock()
						}
						cancel()
					}
				}()
			}
			wg.Wait()
			ok := int64(workers*each - len(errs))
			if len(errs) > 0 {
				for name, tail := range deploy.StderrTails(d.Processes()) {
					t.Logf("%s last output:\n%s", name, tail)
				}
				t.Fatalf("%d calls ok, %d failed:\n%s", ok, len(errs), strings.Join(errs, "\n"))
			}
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			for _, g := range []string{"hop1", "hop2"} {
				share := float64(ok) / 2
				for _, pr := range hostsOf(d, g) {
					n := served(t, pr)
					// The deployer's health checks count too: a few.
					if float64(n) < 0.8*share || float64(n) > 1.2*share+5 {
						t.Errorf("%s served %d of %d calls, want %.0f ± 20%%", pr.Info().Name, n, ok, share)
					}
				}
			}
		})
	}
}

func hostsOf(d *local.Deployment, group string) []deploy.Process {
	var out []deploy.Process
	for _, p := range groupProcs(d, group) {
		if p.Info().Role == deploy.RoleHost {
			out = append(out, p)
		}
	}
	return out
}
