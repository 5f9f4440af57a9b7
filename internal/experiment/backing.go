package experiment

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/runtime"
)

// startBacking starts, before the first run, the backing services (a
// database) that the experiment's apps declare, in one pool every run's
// deployment restores and uses; a server that cannot start fails the
// experiment here instead of every run. A remote deployer's runs are left
// out: the kube deployer runs its backing services as pods of the
// deployment. The caller closes the pool.
func startBacking(ctx context.Context, prepared map[string]*Prepared, logw io.Writer) (*backing.Pool, error) {
	pool := backing.NewPool(logw)
	var topos []*runtime.Topology
	for _, id := range slices.Sorted(maps.Keys(prepared)) {
		pr := prepared[id]
		if deploy.IsRemote(pr.Deployer) {
			continue
		}
		pr.Backing = pool
		topos = append(topos, pr.Runtime)
	}
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
