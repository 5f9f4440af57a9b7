package local

import (
	"context"
	"fmt"
	"slices"

	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/runtime"
)

// backing restores the backing services the app declares, through the
// caller's pool or one of the deployment's own, and returns opts.Env with
// their addresses added for every host.
func (d *Deployment) backing(ctx context.Context, opts *Options) ([]string, error) {
	if len(runtime.BackingsOf(d.topo)) == 0 {
		return opts.Env, nil
	}
	pool := opts.Backing
	if pool == nil {
		d.ownBacking = backing.NewPool(opts.Log)
		pool = d.ownBacking
	}
	env, err := pool.Acquire(ctx, d.topo)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: %w", d.id, err)
	}
	return append(slices.Clone(opts.Env), env...), nil
}
