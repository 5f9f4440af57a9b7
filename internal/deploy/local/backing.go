package local

import (
	"context"
	"fmt"
	"slices"

	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/ingress/nginx"
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

// startIngress runs the ingress the app asks for (app.ingress) in front of
// the gateway, which clients then reach through it.
func (d *Deployment) startIngress(ctx context.Context) error {
	switch name := runtime.IngressOf(d.topo); name {
	case "":
		return nil
	case nginx.Name:
		s, err := nginx.Start(ctx, d.gatewayAddr())
		if err != nil {
			return fmt.Errorf("deployment %s: %w", d.id, err)
		}
		d.ingress = s
		d.gatewayURL = s.URL()
		return nil
	default:
		return fmt.Errorf("deployment %s: unknown ingress %q", d.id, name)
	}
}
