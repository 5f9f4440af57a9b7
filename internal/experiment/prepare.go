package experiment

import (
	"context"
	"errors"
	"fmt"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Prepared is one design point checked and ready to deploy and load.
type Prepared struct {
	Spec     *spec.Spec
	Deployer deploy.Deployer
	Runtime  *runtime.Topology
	Load     load.Config
	// Backing is the experiment's pool of backing servers (startBacking).
	Backing *backing.Pool
}

// Prepare resolves a run's effective spec against its deployer, its app and
// the load generator, so that every error in any run surfaces before the
// first one starts.
func Prepare(s *spec.Spec) (*Prepared, error) {
	dep, rp, err := deploy.Resolve(s)
	if err != nil {
		return nil, err
	}
	var lc load.Config
	if err := s.Decode("load", &lc); err != nil {
		return nil, err
	}
	if err := lc.Validate(); err != nil {
		return nil, s.Locate("load", err)
	}
	if err := checkGenerators(s, lc); err != nil {
		return nil, err
	}
	return &Prepared{Spec: s, Deployer: dep, Runtime: rp, Load: lc}, nil
}

// DeployOptions are the options a prepared run is deployed with under
// iso: the system under test's CPUs, its telemetry backends' CPUs
// (deploy.telemetry_cpus), the experiment's backing servers.
func (p *Prepared) DeployOptions(iso *Isolation) deploy.Options {
	return deploy.Options{CPUs: iso.DeployCPUs(), TelemetryCPUs: iso.TelemetryCPUs(p.Spec.Deploy.TelemetryCPUs), Backing: p.Backing}
}

// Timing reads the warm-up and measurement durations of a prepared run.
func (p *Prepared) Timing() Timing {
	return Timing{Warmup: p.Load.Warmup.D(), Duration: p.Load.MeasureDuration()}
}

// PlanSpec is NewPlan with every design point prepared; the prepared points
// are returned keyed by run ID.
func PlanSpec(ctx context.Context, s *spec.Spec, seed int64) (*Plan, map[string]*Prepared, error) {
	bySpec := map[*spec.Spec]*Prepared{}
	p, err := NewPlan(ctx, s, seed, func(rs *spec.Spec) (Timing, error) {
		pr, err := Prepare(rs)
		if err != nil {
			return Timing{}, noLoad(s, err)
		}
		bySpec[rs] = pr
		return pr.Timing(), nil
	})
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]*Prepared, len(p.Runs))
	var errs []error
	timed := map[*spec.Spec]bool{} // repetitions share their point's spec
	for _, r := range p.Runs {
		pr, ok := bySpec[r.Spec]
		if !ok {
			return nil, nil, fmt.Errorf("run %s has no prepared spec", r.ID)
		}
		if !timed[r.Spec] {
			timed[r.Spec] = true
			// Faults are timed within the measurement, which only
			// the plan knows (experiment.duration overrides load's).
			errs = append(errs, pr.Runtime.CheckFaultTimes(pr.Spec, p.Duration))
		}
		out[r.ID] = pr
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return p, out, nil
}
