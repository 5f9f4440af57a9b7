package local_test

import (
	"context"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
)

// TestLanguageReplicas deploys select with its selector in 2 replicas of a
// Java or a Python host: the frontend's calls spread over both within
// ±10%, whether the caller is a Go host or a Python one (whose balancer is
// the HostConfig's deploy.balancer).
func TestLanguageReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, transport, balancer string
		langs                     map[string]string
		workers                   int
	}{
		{"2 java selectors over grpc", "grpc", "round_robin", map[string]string{"selector": runtime.LangJava}, 4},
		{"2 python selectors over http", "http", "round_robin", map[string]string{"selector": runtime.LangPython}, 4},
		// One caller at a time: least_outstanding then sees ties only, and
		// breaks them to the replica picked least, an even share.
		{"python frontend, 2 java selectors, least_outstanding", "grpc", "least_outstanding",
			map[string]string{"frontend": runtime.LangPython, "selector": runtime.LangJava}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			langs := ""
			for c, l := range tc.langs {
				needLanguage(t, l)
				langs += c + " = \"" + l + "\"\n"
			}
			p := resolve(t, "[app]\nname = \"select\"\n[deploy]\nplacement = \"split\"\nstart_timeout = \"90s\"\ntransport = \""+tc.transport+
				"\"\nbalancer = \""+tc.balancer+"\"\n[deploy.replicas]\nselector = 2\n[deploy.languages]\n"+langs)
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
			defer cancel()
			d, err := local.Deploy(ctx, p, local.Options{})
			if err != nil {
				t.Fatalf("deploy: %v", err)
			}
			t.Cleanup(func() { _ = d.Stop(context.Background()) })
			sel := groupProcs(d, "selector")
			if len(sel) != 2 {
				t.Fatalf("selector processes %v, want 2", sel)
			}
			conn := dialEntry(t, ctx, d)
			stop := make(chan struct{})
			// Long enough for some dozens of calls on a busy machine.
			time.AfterFunc(8*time.Second, func() { close(stop) })
			ok, failed := callLoad(p, conn, tc.workers, stop)
			if failed > 0 || ok < 30 {
				t.Fatalf("%d calls ok, %d failed", ok, failed)
			}
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			share := float64(ok) / 2
			for _, pr := range sel {
				if n := served(t, pr); float64(n) < 0.9*share || float64(n) > 1.1*share {
					t.Errorf("%s served %d of %d calls, want %.0f ± 10%%", pr.Info().Name, n, ok, share)
				}
			}
		})
	}
}
