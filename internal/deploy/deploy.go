// Package deploy defines how svclab starts a resolved topology somewhere and
// what a running one reports, and keeps the registry of the deployers that
// do it.
//
// A Deployer turns a runtime.Topology into a running Deployment: one or more
// processes that host the topology's groups. The experiment runner and
// `svclab up` use deployers only through these interfaces, chosen by the
// spec's deploy.deployer, so that a new deployer (network namespaces,
// Kubernetes) plugs in without touching them. Implementations register
// themselves from an init function, as transports do; a binary imports
// deploy/all for its side effect to have every deployer.
//
// What the runner learns about a process — its name, its resource counters,
// its exit and its last output lines — comes through Process, so the runner
// never reads /proc or signals a PID itself.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/registry"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
)

// Deployer starts topologies.
type Deployer interface {
	// Name is the value of deploy.deployer that selects this deployer.
	Name() string
	// Deploy starts every group of topo and returns once each is ready
	// to serve. ctx bounds the start only; the deployment runs until
	// Stop. On error nothing it started is left running.
	Deploy(ctx context.Context, topo *runtime.Topology, opts Options) (Deployment, error)
}

// Options are what every deployer accepts; a deployer keeps options of its
// own in its package. The zero value is ready to use.
type Options struct {
	// Log, when set, receives every line the processes print, prefixed
	// with "[name] ".
	Log io.Writer
	// ReadyTimeout bounds the wait for every process to be ready; default
	// the topology's StartTimeout.
	ReadyTimeout time.Duration
	// Env is added to every process's environment (test knobs such as
	// runtime.FailComponentEnv).
	Env []string
	// Executable is the svclab binary a deployer that runs hosts from
	// this machine starts; default os.Executable(). A test passes its own
	// binary, which then runs as a host (see local.RunIfChild).
	Executable string
	// Network, when set, places each process and listener (see Network);
	// a deployer that cannot honour it fails.
	Network Network
	// CPUs, when set, is the CPU list (cgroup cpuset, e.g. "1-3") every
	// process of the deployment runs on: the system under test's share
	// under experiment.isolation = "cpuset".
	CPUs string
	// TelemetryCPUs, when set, is the CPU list the deployment's telemetry
	// backends (Jaeger, Prometheus) run on instead of CPUs: the load
	// generator's under deploy.telemetry_cpus = "generator", as a
	// collector on a machine of its own.
	TelemetryCPUs string
	// Backing runs the backing services the app declares (a database);
	// the experiment runner passes one pool for all its runs. Nil: the
	// deployment starts its own and stops it with the deployment.
	Backing *backing.Pool
}

// Deployment is a running topology. Its methods are safe for concurrent use.
type Deployment interface {
	// ID marks every process of the deployment.
	ID() string
	// Topology is the topology deployed.
	Topology() *runtime.Topology
	// Entry is where clients call the entry component over the
	// topology's transport (the gateway when nothing can leave the
	// process, with inproc).
	Entry() runtime.Endpoint
	// GatewayURL is the base URL of the HTTP/JSON gateway to the entry:
	// POST GatewayURL + "/<package.Service>/<Method>" with a protojson
	// body.
	GatewayURL() string
	// Dial connects to the entry over its transport.
	Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error)
	// CurlExamples are ready-to-paste commands that call the entry through
	// the gateway, one per default request of the app.
	CurlExamples() []string
	// Processes lists the deployment's processes, in the topology's group
	// order.
	Processes() []Process
	// Exited delivers each process that exits before Stop is called.
	Exited() <-chan Process
	// Stop ends every process, within a grace period the deployer bounds
	// itself, sooner when ctx ends. It is safe to call more than once.
	Stop(ctx context.Context) error
}

var deployers = registry.New[Deployer]("deployer")

// Register makes a deployer available by its name. It panics on a
// duplicate name, as that is a programming error.
func Register(d Deployer) { deployers.Register(d.Name(), d) }

// Lookup returns the deployer registered under name.
func Lookup(name string) (Deployer, error) { return deployers.Lookup(name) }

// Names lists the registered deployers, sorted.
func Names() []string { return deployers.Names() }

// Resolve checks everything s says about deployment before anything
// starts: the deployer it names is registered, its topology resolves
// (runtime.Resolve), and, unless the deployer is Remote, the backing
// services its app declares and the sidecar, ingress and mesh programs it
// names can run here. Errors name the file, line and key.
func Resolve(s *spec.Spec) (Deployer, *runtime.Topology, error) {
	d, err := Lookup(s.Deploy.Deployer)
	if err != nil {
		return nil, nil, s.Errorf("deploy.deployer", "%w", err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		return nil, nil, err
	}
	if v, ok := d.(SpecChecker); ok {
		if err := v.CheckSpec(s, topo); err != nil {
			return nil, nil, err
		}
	}
	if IsRemote(d) {
		// Only what the app declares is checked: the programs run
		// elsewhere, from images, and this machine need not have them.
		if err := backing.CheckDeclared(topo); err != nil {
			return nil, nil, s.Errorf("app.name", "%w", err)
		}
	} else if err := checkLocalPrograms(s, topo); err != nil {
		return nil, nil, err
	}
	if c, ok := d.(Checker); ok {
		if err := c.Check(s, topo); err != nil {
			return nil, nil, err
		}
	}
	return d, topo, nil
}

// checkLocalPrograms checks that this machine has the programs a deployer
// that runs everything here starts beside the hosts: the backing servers,
// the ingress, the sidecar proxy and the mesh backends.
func checkLocalPrograms(s *spec.Spec, topo *runtime.Topology) error {
	if err := backing.Check(topo); err != nil {
		return s.Errorf("app.name", "%w", err)
	}
	if err := checkIngress(s, topo); err != nil {
		return err
	}
	if err := sidecar.Check(s); err != nil {
		return err
	}
	return checkMesh(s, topo)
}

// Remote is a Deployer whose deployments run away from this machine (the
// kube deployer's pods, which run PostgreSQL, Redis and Istio's proxies
// from images): when RunsRemotely is true, Resolve does not look here for
// the programs a local deployment starts (PostgreSQL, redis-server, a
// sidecar proxy, nginx, Jaeger, Prometheus), only at what the app
// declares.
type Remote interface {
	RunsRemotely() bool
}

// IsRemote reports whether d is a Remote deployer that runs remotely.
func IsRemote(d Deployer) bool {
	r, ok := d.(Remote)
	return ok && r.RunsRemotely()
}

// SpecChecker is a Deployer with keys of its own in [deploy] (the netns
// deployer's hosts and links): Resolve calls CheckSpec before anything
// starts, and its errors name file, line and key (spec.Spec.Errorf).
type SpecChecker interface {
	CheckSpec(s *spec.Spec, topo *runtime.Topology) error
}

// Sweeper is a Deployer that can leave state outside this process behind
// when svclab is killed with -9 (network namespaces): Sweep removes what
// dead svclab processes left and says what it removed. `svclab clean`
// calls every registered deployer's.
type Sweeper interface {
	Sweep() (removed []string, err error)
}

// Sweep runs every registered Sweeper.
func Sweep() ([]string, error) {
	var out []string
	var errs []error
	for _, name := range Names() {
		d, _ := Lookup(name)
		if sw, ok := d.(Sweeper); ok {
			r, err := sw.Sweep()
			out = append(out, r...)
			if err != nil {
				errs = append(errs, fmt.Errorf("deployer %s: %w", name, err))
			}
		}
	}
	return out, errors.Join(errs...)
}

// Checker is a Deployer that can tell, before anything starts, that this
// machine lacks what topo needs of it (a JDK, a build); Resolve calls it.
// Its errors are *spec.Errors naming the key that asked for the thing.
type Checker interface {
	Check(s *spec.Spec, topo *runtime.Topology) error
}
