package experiment

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/runtime"
)

// startBacking starts, before the first run, the backing services (a
// database) that the experiment's apps declare (topos, PlanRun's), in one
// pool every run's deployment restores and uses; a server that cannot
// start fails the experiment here instead of every run. PlanRun leaves a
// remote deployer's runs out: the kube deployer runs its backing services
// as pods of the deployment. The caller closes the pool.
func startBacking(ctx context.Context, topos []*runtime.Topology, logw io.Writer) (*backing.Pool, error) {
	pool := backing.NewPool(logw)
	if err := pool.Prepare(ctx, topos...); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = pool.Close(cctx)
		return nil, fmt.Errorf("before the first run: %w", err)
	}
	return pool, nil
}

// closeBacking stops the pool's servers at the end of the experiment.
func closeBacking(pool *backing.Pool, logw io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := pool.Close(ctx); err != nil {
		fmt.Fprintln(logw, "warning:", err)
	}
}

// usesPool is whether run pr's deployment takes its backing services from
// the experiment's pool: not a remote deployer's, whose cluster runs them.
func usesPool(pr *Prepared) bool { return !deploy.IsRemote(pr.Deployer) }
