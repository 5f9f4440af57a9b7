package experiment

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
)

// stopTimeout bounds a trial's Stop, the deployer's grace period
// included.
const stopTimeout = 10 * time.Second

// Trial is one deployment of a topology through its lifecycle, the part
// `svclab run`, `svclab capacity` and `svclab up` share: deployed under
// isolation (on the system under test's CPUs), watched so that a process
// that exits cancels the trial's context with its *deploy.ExitError as the
// cause, driven (its load target, its faults) and stopped. What a run
// records of it is its recorders' (recorder.go).
type Trial struct {
	// Deployment is what runs.
	Deployment deploy.Deployment

	ctx      context.Context
	cancel   context.CancelCauseFunc
	stopOnce sync.Once
	stopErr  error
}

// StartTrial deploys topo with d under iso (nil: no isolation) and starts
// watching its processes. ctx bounds the start, and the trial's context
// ends with it. On error nothing is left running.
func StartTrial(ctx context.Context, d deploy.Deployer, topo *runtime.Topology, opts deploy.Options, iso *Isolation) (*Trial, error) {
	var dep deploy.Deployment
	err := iso.AsSUT(func() (err error) {
		dep, err = d.Deploy(ctx, topo, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	t := &Trial{Deployment: dep}
	t.ctx, t.cancel = deploy.Watch(ctx, dep)
	return t, nil
}

// StartPrepared is StartTrial for a prepared design point under iso.
func StartPrepared(ctx context.Context, pr *Prepared, iso *Isolation) (*Trial, error) {
	return StartTrial(ctx, pr.Deployer, pr.Runtime, pr.DeployOptions(iso), iso)
}

// Context ends when the trial's parent context does, or when a process of
// the deployment exits: then Crash is the exit and context.Cause says so.
func (t *Trial) Context() context.Context { return t.ctx }

// Crash is the exit of the process that ended the trial's context, nil
// while none has.
func (t *Trial) Crash() *deploy.ExitError { return deploy.Crash(t.ctx) }

// Target builds what the load generator drives (TargetFor) in the trial's
// context, so that a crash ends its first calls.
func (t *Trial) Target(pr *Prepared) (*load.Target, error) { return t.target(pr, nil) }

// target is Target counting, in sent (when not nil), the calls over the
// run's transport. A deployment that runs the load itself
// (deploy.Capabilities.Load) needs none: nil, as its entry is reachable
// only from inside.
func (t *Trial) target(pr *Prepared, sent *callCounter) (*load.Target, error) {
	if t.Deployment.Capabilities().Load != nil {
		return nil, nil
	}
	return targetFor(t.ctx, pr, t.Deployment, sent)
}

// StartFaults injects the topology's faults of [deploy.faults] in the
// measurement that starts at the time start delivers and lasts d, until
// the trial's context ends or the faults are stopped; ended (when not nil)
// is told of each window as it ends.
func (t *Trial) StartFaults(start <-chan time.Time, d time.Duration, ended func(FaultWindow)) *faultRun {
	return startFaults(t.ctx, t.Deployment, t.Deployment.Topology().Faults, start, d, ended)
}

// Stop ends the watch and stops the deployment, within stopTimeout. It is
// safe to call more than once.
func (t *Trial) Stop() error {
	t.stopOnce.Do(func() {
		t.cancel(nil)
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		t.stopErr = t.Deployment.Stop(ctx)
	})
	return t.stopErr
}

// Foreground is `svclab up`: it describes the deployment on w and keeps
// it up until the trial's context ends (Ctrl-C, or a process's exit,
// which is then the error), then stops it (deploy.Hold).
func (t *Trial) Foreground(w io.Writer) error {
	defer t.cancel(nil)
	return deploy.Hold(t.ctx, t.Deployment, w)
}

// crashText says which process exited and how, for a failed run's reason
// and the capacity search's error: "group hop2 (components hop2) exited
// during the run: exit status 1".
func crashText(e *deploy.ExitError, during string) string {
	info := e.Process
	what := fmt.Sprintf("group %s (components %s)", info.Group, strings.Join(info.Components, ", "))
	if info.Name != info.Group {
		// One of the group's replicas: which one died.
		what = fmt.Sprintf("replica %s of group %s (components %s)", info.Name, info.Group, strings.Join(info.Components, ", "))
	}
	if info.Role != deploy.RoleHost {
		what = info.String() // a sidecar proxy
	}
	return fmt.Sprintf("%s exited during %s: %s", what, during, e.Status)
}

// CrashError is the error of a search or a load that a process's exit
// ended: which process, how, and its last output lines.
func CrashError(e *deploy.ExitError, during string) error {
	return fmt.Errorf("%s; its last output:\n%s", crashText(e, during), deploy.IndentTail(e.Tail))
}
