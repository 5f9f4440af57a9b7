package boutique_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/spec"
)

// BenchmarkDeploy is the time from Deploy to ready (every host passed its
// health check, the gateway serves) of boutique, stopped after each;
// the Redis server is the pool's, started once, as in an experiment.
//
//	go test ./apps/boutique -run '^$' -bench Deploy -benchtime 5x
func BenchmarkDeploy(b *testing.B) {
	for _, c := range []struct{ placement, store string }{
		{"monolith", "memory"}, {"split", "memory"}, {"split", "redis"},
	} {
		b.Run(c.placement+"/"+c.store, func(b *testing.B) {
			pool := newPool(b)
			s := loadSpec(b, fmt.Sprintf("[app]\nname = \"boutique\"\ncart_store = %q\n[deploy]\ntransport = \"grpc\"\nplacement = %q\n", c.store, c.placement))
			_, topo, err := deploy.Resolve(s)
			if err != nil {
				b.Fatal(err)
			}
			if err := pool.Prepare(context.Background(), topo); err != nil {
				b.Fatal(err)
			}
			timeDeploys(b, func(ctx context.Context) (deploy.Deployment, error) {
				return local.Deploy(ctx, topo, local.Options{Options: deploy.Options{Backing: pool}})
			})
		})
	}
}

// BenchmarkDeployTwoHosts is the same for S0's placement (h), every
// component its own process spread over two netns hosts
// (experiments/s0-boutique-h.toml): namespaces, bridge, links and 11
// processes, to ready. Needs root.
func BenchmarkDeployTwoHosts(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: the netns deployer creates network namespaces")
	}
	s, err := spec.Load(filepath.Join("..", "..", "experiments", "s0-boutique-h.toml"))
	if err != nil {
		b.Fatal(err)
	}
	dep, topo, err := deploy.Resolve(s)
	if err != nil {
		b.Fatal(err)
	}
	timeDeploys(b, func(ctx context.Context) (deploy.Deployment, error) {
		return dep.Deploy(ctx, topo, deploy.Options{})
	})
}

// timeDeploys reports the mean time up of deployments made by up, each
// stopped (untimed) before the next.
func timeDeploys(b *testing.B, up func(context.Context) (deploy.Deployment, error)) {
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		d, err := up(ctx)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		if err := d.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
}
