package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	pr, _, err := prepare(s)
	if err != nil {
		return nil, err
	}
	return pr, nil
}

// prepare is Prepare that, with its error, returns what it resolved (the
// topology when its groups are known, the load as it decoded) and the
// load's own error apart.
func prepare(s *spec.Spec) (pr *Prepared, loadErr, err error) {
	// The deployment and the load are checked apart, so that a mistake in
	// each is reported in one pass.
	dep, rp, derr := deploy.Resolve(s)
	lc, lerr := decodeLoad(s)
	return &Prepared{Spec: s, Deployer: dep, Runtime: rp, Load: lc}, lerr, spec.Join(derr, lerr)
}

// decodeLoad decodes and checks s's [load] table, the values that
// decoded as well as the keys that did not.
func decodeLoad(s *spec.Spec) (load.Config, error) {
	var lc load.Config
	var errs spec.Errors
	errs.Add(load.Decode(s, &lc))
	if err := lc.Validate(); err != nil {
		errs.AddLater(s.Locate("load", err))
	} else {
		errs.AddLater(checkGenerators(s, lc))
	}
	return lc, errs.Err()
}

// Check adds to ownErr, the error spec.Load gave s for its [deploy] or
// [experiment] table, the mistakes of the rest, so that one invocation
// reports them all: the deployment (deploy.Resolve: [app], the
// deployer's tables, the placement, this machine), and [load] for a
// command that sends load, with the faults' times against the load's,
// as a design point is checked. The design points are not known for
// sure while [experiment] is wrong, so each factor's key is set to its
// first level as written (spec.Spec.AtFirstLevels): a factor whose name
// is no key is refused at its line, and every key no factor sets is
// checked as the spec writes it. What the checks say of a key a factor
// sets is left out, as its levels are not known for sure either, and so
// is what they would say of a key found wrong before them
// (spec.Errors.AddLater).
func Check(s *spec.Spec, ownErr error, sendsLoad bool) error {
	var es spec.Errors
	es.Add(ownErr)
	at, atErr := s.AtFirstLevels()
	var later []error
	route := func(err error) {
		for _, e := range flatten(err) {
			var se *spec.Error
			switch {
			case !errors.As(e, &se):
				later = append(later, e)
			case at.SetByFactor(se.Key):
				// About a level, not known to be one.
			case strings.HasPrefix(se.Key, "experiment.factors."):
				// A factor that names no key: that mistake of the
				// factor's, beside any other ownErr has of it.
				es.Add(e)
			default:
				later = append(later, e)
			}
		}
	}
	route(atErr)
	_, hasLoad := at.Lookup("load")
	var err error
	if hasLoad && sendsLoad {
		_, err = prepareTimed(s, at)
	} else {
		_, _, err = deploy.Resolve(at)
	}
	route(err)
	es.AddLater(errors.Join(later...))
	return es.Err()
}

// flatten lists the errors err joins, however deep.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// CheckDesign is Check for a command that expands the design (run, plan,
// kube render): when the design points are known despite ownErr
// (spec.Spec.DesignKnown), each of them is checked as CheckPlan does,
// and a mistake of a table that a factor sets is found at its level;
// otherwise Check checks the spec as written.
func CheckDesign(ctx context.Context, s *spec.Spec, ownErr error) error {
	if !s.DesignKnown() || len(s.Experiment.Factors) == 0 {
		return Check(s, ownErr, true)
	}
	var es spec.Errors
	es.Add(ownErr)
	_, err := CheckPlan(ctx, s, 1)
	es.AddLater(err)
	return es.Err()
}

// DeployOptions are the options a prepared run is deployed with under
// iso: the system under test's CPUs, its telemetry backends' CPUs
// (deploy.telemetry_cpus), the experiment's backing servers.
func (p *Prepared) DeployOptions(iso *Isolation) deploy.Options {
	return deploy.Options{CPUs: iso.DeployCPUs(), TelemetryCPUs: iso.TelemetryCPUs(p.Spec.Deploy.TelemetryCPUs), Backing: p.Backing}
}

// Timing reads the warm-up and measurement durations of a prepared run,
// and the requests an open loop sends over them.
func (p *Prepared) Timing() Timing {
	t := Timing{Warmup: p.Load.Warmup.D(), Duration: p.Load.MeasureDuration()}
	warm := p.Load.WarmupRate
	if warm == 0 {
		warm = p.Load.Rate
	}
	t.Requests = p.Load.Rate*t.Duration.Seconds() + warm*t.Warmup.Seconds()
	return t
}

// PlanRun is CheckPlan for a plan that is run (svclab run): every design
// point is prepared, so every error surfaces before the first run, and
// dropped, so that the memory planning takes grows with the runs only;
// Plan.Prepare makes a run's point again when the runner comes to it.
// What the runner needs of every point before the first run, the backing
// services, it keeps: one topology of each distinct set the points
// declare (startBacking).
func PlanRun(ctx context.Context, s *spec.Spec, seed int64) (*Plan, []*runtime.Topology, error) {
	var backed []*runtime.Topology
	seen := map[string]bool{}
	p, err := newPlan(ctx, s, seed, func(rs *spec.Spec) (Timing, error) {
		pr, err := prepareTimed(s, rs)
		if err != nil {
			return Timing{}, err
		}
		if b := runtime.BackingsOf(pr.Runtime); len(b) > 0 && usesPool(pr) && !seen[fmt.Sprint(b)] {
			seen[fmt.Sprint(b)] = true
			backed = append(backed, pr.Runtime)
		}
		return pr.Timing(), nil
	}, false)
	if err != nil {
		return nil, nil, err
	}
	return p, backed, nil
}

// Prepare prepares run r's design point again, as PlanRun did: planning
// checked it, so an error here is this machine changing under the
// experiment (a program removed, a CPU taken offline).
func (p *Plan) Prepare(r Run) (*Prepared, error) {
	pr, err := Prepare(p.SpecOf(r))
	if err != nil {
		return nil, fmt.Errorf("run %s passed its checks while planning, and now: %w", r.ID, err)
	}
	return pr, nil
}

// CheckPlan plans an experiment that is shown, not run (svclab plan):
// every design point is prepared, so every error surfaces, and dropped,
// so that the memory planning takes grows with the runs only, not with
// what a deployment holds; Plan.SpecOf makes a point's spec again.
func CheckPlan(ctx context.Context, s *spec.Spec, seed int64) (*Plan, error) {
	return newPlan(ctx, s, seed, func(rs *spec.Spec) (Timing, error) {
		pr, err := prepareTimed(s, rs)
		if err != nil {
			return Timing{}, err
		}
		return pr.Timing(), nil
	}, false)
}

// prepareTimed prepares one design point and checks that each of its
// faults acts within the measurement, which experiment.duration sets when
// it overrides the load's, beside the point's other mistakes when the
// topology and the load's timing are known despite them.
func prepareTimed(s, rs *spec.Spec) (*Prepared, error) {
	pr, loadErr, err := prepare(rs)
	if err != nil {
		err = noLoad(s, err)
	}
	if pr.Runtime != nil && loadErr == nil {
		measure := pr.Timing().Duration
		if d := rs.Experiment.Duration; d != nil {
			measure = d.D()
		}
		var es spec.Errors
		es.Add(err)
		es.AddLater(pr.Runtime.CheckFaultTimes(pr.Spec, measure))
		err = es.Err()
	}
	if err != nil {
		return nil, err
	}
	return pr, nil
}
