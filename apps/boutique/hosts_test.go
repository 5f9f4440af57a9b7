package boutique_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	_ "github.com/svclab/svclab/internal/deploy/netns" // registers "netns"
	"github.com/svclab/svclab/internal/spec"
)

// TestTwoHosts deploys S0's two-host placements (e)-(h) as
// experiments/s0-boutique-{e,f,g,h}.toml write them, on the netns
// deployer, and drives each with S0's scripted user through the client's
// namespace, every answer checked.
func TestTwoHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys boutique on two hosts; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the netns deployer creates network namespaces")
	}
	pool := newPool(t)
	for _, p := range []struct{ name, transport, currency string }{
		{"e", "grpc", "EUR"}, {"f", "http", "JPY"}, {"g", "grpc", "JPY"}, {"h", "grpc", "EUR"},
	} {
		t.Run(p.name, func(t *testing.T) {
			s, err := spec.Load(filepath.Join("..", "..", "experiments", "s0-boutique-"+p.name+".toml"))
			if err != nil {
				t.Fatal(err)
			}
			if s, err = s.With(map[string]any{"deploy.transport": p.transport, "app.order_ids": "sequence"}); err != nil {
				t.Fatal(err)
			}
			dep, topo, err := deploy.Resolve(s)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			d, err := dep.Deploy(ctx, topo, deploy.Options{Backing: pool})
			if err != nil {
				t.Fatalf("deploy: %v", err)
			}
			defer func() {
				if err := d.Stop(context.Background()); err != nil {
					t.Errorf("stop: %v", err)
				}
			}()
			scriptedUser(t, d.GatewayURL(), p.currency)
		})
	}
}
