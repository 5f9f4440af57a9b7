package local

import (
	"context"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/autoscaler"
)

// The autoscalers of [deploy.autoscale] (internal/deploy/autoscaler) see
// the deployment through autoscaled: each group's live replicas and Scale.

// autoscaled is the deployment as an autoscaler.Target.
type autoscaled struct{ d *Deployment }

func (a autoscaled) Live(g int) []autoscaler.Replica {
	var out []autoscaler.Replica
	for _, p := range a.d.live(g) {
		out = append(out, autoscaler.Replica{Name: p.info.Name, ReadyAt: p.readyAt, Resources: p.Resources()})
	}
	return out
}

func (a autoscaled) Scale(ctx context.Context, group string, n int) error {
	return a.d.Scale(ctx, group, n)
}

// startAutoscalers starts the loops of the groups that have one.
func (d *Deployment) startAutoscalers() (err error) {
	d.as, err = autoscaler.Start(d.topo, autoscaled{d}, func(format string, args ...any) {
		d.logf("deployment %s: "+format, append([]any{d.id}, args...)...)
	})
	return err
}

// ScaleEvents returns every decision of the deployment's autoscalers (a
// deploy.Autoscaled).
func (d *Deployment) ScaleEvents() []deploy.ScaleEvent { return d.as.Events() }
