package experiment

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/spec"
)

// checkGenerators refuses load.generators > 1 where the runner cannot
// start them: the local deployer runs them as processes of this machine;
// on Kubernetes the load pods are deploy.kube.generators.
func checkGenerators(s *spec.Spec, lc load.Config) error {
	if lc.GeneratorCount() > 1 && s.Deploy.Deployer != "" && s.Deploy.Deployer != spec.DefaultDeployer {
		return s.Errorf("load.generators", "several generator processes run with the %q deployer only, got deploy.deployer = %q", spec.DefaultDeployer, s.Deploy.Deployer)
	}
	return nil
}

// generators are the generator processes of one run, as the resource
// sampler follows them: each is "loadgen#I", in the generator's CPU set
// (it inherits the runner's cgroup).
type generators struct {
	iso   *Isolation
	mu    sync.Mutex
	procs []Sampled
	stat  *procstat.Reader
}

func (g *generators) started(sh load.Shard, pid int) {
	if g.stat == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.procs = append(g.procs, Sampled{
		Process: deploy.ProcessInfo{Name: fmt.Sprintf("loadgen#%d", sh.Index), Role: deploy.RoleLoadGen, PID: pid, Limits: g.iso.loadgenLimits()},
		Source:  g.stat.Process(pid),
	})
}

// follow is the sampler's list of processes that may join: the
// generators, and the deployment's when it scales.
func (g *generators) follow(dep deploy.Deployment, scales bool) func() []Sampled {
	return func() []Sampled {
		var out []Sampled
		if scales {
			out = sampledOf(dep)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		return append(out, g.procs...)
	}
}

// runLoad runs a run's load: in this process, or over load.generators
// processes (`svclab load --shard I/N`), whose results are merged. Those
// reach the app by URL: the [load] table's target, or the deployment's
// HTTP/JSON gateway.
func (g *generators) runLoad(ctx context.Context, pr *Prepared, dep deploy.Deployment, cfg load.Config, t *load.Target, opt load.Options) (*load.Result, error) {
	if cfg.GeneratorCount() == 1 {
		return load.Run(ctx, cfg, t, opt)
	}
	if cfg.Request != nil || cfg.Flow != nil || cfg.Target != "" {
		if cfg.Target == "" {
			cfg.Target = dep.GatewayURL()
		}
	} else {
		var err error
		if cfg, err = gatewayConfig(cfg, dep.GatewayURL(), pr.Runtime.Requests()); err != nil {
			return nil, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("load generators: the svclab binary to start them: %w", err)
	}
	return load.RunGenerators(ctx, cfg, load.GeneratorsOptions{Executable: exe, Progress: opt.Progress, Started: g.started})
}

func newGenerators(iso *Isolation) *generators {
	g := &generators{iso: iso}
	// Without /proc the generators run unsampled, as the deployment's
	// processes would.
	g.stat, _ = procstat.Open()
	return g
}
