package deploy

import (
	"context"

	"github.com/svclab/svclab/internal/load"
)

// LoadRunner is a Deployment that runs the load generator itself, where
// the runner's own generator cannot reach the entry (the kube deployer's
// cluster runs it as a Job of deploy.kube.generators pods). The runner
// calls RunLoad instead of load.Run and records the result as its own:
// the generators' histograms merged, with their audits.
type LoadRunner interface {
	RunLoad(ctx context.Context, cfg load.Config, opts load.Options) (*load.Result, error)
}
