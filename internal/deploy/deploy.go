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
	"strings"
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
	// Traits says what the deployer owns of a spec and what it can do
	// beyond Deploy: the one place Resolve and `svclab clean` ask.
	Traits() Traits
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
	// binary, which then runs as a host (see hostentry.RunIfChild).
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
	// Capabilities says what else the deployment can do; a deployment
	// that wraps another passes the inner one's on (Capabilities.Over).
	Capabilities() Capabilities
}

var deployers = registry.New[Deployer]("deployer")

// Register makes a deployer available by its name. It panics on a
// duplicate name, as that is a programming error.
func Register(d Deployer) { deployers.Register(d.Name(), d) }

// Lookup returns the deployer registered under name.
func Lookup(name string) (Deployer, error) { return deployers.Lookup(name) }

// Names lists the registered deployers, sorted.
func Names() []string { return deployers.Names() }

// Traits are a deployer's keys and abilities beyond Deploy. The zero
// value is a deployer with no keys of its own that runs everything on
// this machine and leaves nothing behind.
type Traits struct {
	// DecodeKeys decodes the deployer's own tables of [deploy] (the kube
	// deployer's [deploy.kube]) with spec.Spec.Decode and checks each
	// value alone. Resolve calls it for every registered deployer,
	// whichever the spec chooses, so that a spec that runs locally and
	// renders for a cluster has its every key checked; nil for none.
	DecodeKeys func(s *spec.Spec) error
	// CheckSpec checks what s asks of this deployer against the resolved
	// topology: its own keys (the netns deployer's hosts and links),
	// the bounds it puts on keys common to every deployer (the kube
	// deployer's int32 replicas), and the keys it cannot honour (hosts
	// for the local deployer). Resolve calls it when s chooses the
	// deployer; nil for no check.
	CheckSpec func(s *spec.Spec, topo *runtime.Topology) error
	// CheckMachine tells, before anything starts, that this machine
	// lacks what topo needs of it (a JDK, a build); nil for nothing.
	CheckMachine func(s *spec.Spec, topo *runtime.Topology) error
	// Remote is true for a deployer whose deployments run away from this
	// machine (the kube deployer's pods, which run PostgreSQL, Redis and
	// Istio's proxies from images): Resolve then does not look here for
	// the programs a local deployment starts (PostgreSQL, redis-server,
	// a sidecar proxy, nginx, Jaeger, Prometheus), only at what the app
	// declares, nor bounds sizes by this machine's.
	Remote bool
	// Unmanaged is true for a deployer that starts no process (the
	// external deployer): the system under test runs on whatever CPUs its
	// owner gave it, so experiment.isolation cannot give it CPUs apart
	// from the load generator's.
	Unmanaged bool
	// Topology, when set, describes the system the deployer drives in
	// place of runtime.Resolve: a deployer that deploys no app (the
	// external deployer, whose system already runs) has no [app] to
	// resolve. Its errors name file, line and key.
	Topology func(s *spec.Spec) (*runtime.Topology, error)
	// Targets are keys of the deployer's own tables whose values are
	// where the load goes (the external deployer's url), which
	// experiment.CheckRemote holds to this machine as it does
	// load.target, unless --allow-remote.
	Targets []string
	// RunOverhead is what deploying and tearing down one run takes with
	// this deployer beyond the local deployer's (a cluster's pods to be
	// scheduled and ready, its namespace to be deleted), for `svclab
	// plan`'s time estimate only.
	RunOverhead time.Duration
	// Sweep removes what dead svclab processes left outside themselves
	// when killed with -9 (network namespaces) and says what it removed;
	// `svclab clean` calls every registered deployer's. Nil for none.
	Sweep func() (removed []string, err error)
}

// Resolve checks everything s says about deployment before anything
// starts: the deployer it names is registered, every registered
// deployer's own tables decode, its topology resolves (runtime.Resolve),
// the deployer takes what s asks of it (Traits.CheckSpec), and, unless
// the deployer is Remote, the sizes it asks for fit this machine and the
// backing services its app declares and the sidecar, ingress and mesh
// programs it names can run here (and Traits.CheckMachine). Errors name
// the file, line and key, and come together, in file order: every check
// runs whose input is known, the checks of the topology once its groups
// are (runtime.ResolvePartly), leaving out what they would say of a key
// found wrong before them (spec.Errors.AddLater). With an error, the
// topology comes back too when its groups are known, for a caller that
// checks more against it in the same pass (the faults' times against the
// load's); the deployer does not.
func Resolve(s *spec.Spec) (Deployer, *runtime.Topology, error) {
	var errs spec.Errors
	d, err := Lookup(s.Deploy.Deployer)
	if err != nil {
		errs.Add(s.Errorf("deploy.deployer", "%w", err))
	}
	_, err = MachinesOf(s)
	errs.Add(err)
	for _, name := range Names() {
		other, _ := Lookup(name)
		if dec := other.Traits().DecodeKeys; dec != nil {
			errs.Add(dec(s))
		}
	}
	resolve := runtime.ResolvePartly
	if d != nil && d.Traits().Topology != nil {
		resolve = d.Traits().Topology
	}
	topo, err := resolve(s)
	errs.AddLater(err) // not again at deploy.deployer, which an app may name too
	if d == nil || topo == nil {
		return nil, nil, errs.Err()
	}
	// What follows reads the topology and the keys decoded above.
	t := d.Traits()
	if t.CheckSpec != nil {
		errs.AddLater(t.CheckSpec(s, topo))
	}
	if t.Remote {
		// Only what the app declares is checked: the programs run
		// elsewhere, from images, and this machine need not have them.
		if err := backing.CheckDeclared(topo); err != nil {
			errs.AddLater(s.Errorf("app.name", "%w", err))
		}
	} else {
		errs.AddLater(checkMachineSizes(s, topo))
		errs.AddLater(checkLocalPrograms(s, topo))
	}
	if t.CheckMachine != nil {
		errs.AddLater(t.CheckMachine(s, topo))
	}
	if err := errs.Err(); err != nil {
		return nil, topo, err
	}
	return d, topo, nil
}

// checkLocalPrograms checks that this machine has the programs a deployer
// that runs everything here starts beside the hosts: the backing servers,
// the ingress, the sidecar proxy and the mesh backends.
func checkLocalPrograms(s *spec.Spec, topo *runtime.Topology) error {
	if s.Deploy.Sidecar == spec.SidecarIstio {
		return s.Errorf("deploy.sidecar", "sidecar %q runs only on a Kubernetes cluster: set deploy.deployer = \"kube\", or choose one of %s for deployer %q", spec.SidecarIstio, strings.Join(spec.Sidecars, ", "), s.Deploy.Deployer)
	}
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

// IsRemote reports whether d runs its deployments away from this machine
// (Traits.Remote).
func IsRemote(d Deployer) bool { return d.Traits().Remote }

// Sweep runs every registered deployer's Traits.Sweep.
func Sweep() ([]string, error) {
	var out []string
	var errs []error
	for _, name := range Names() {
		d, _ := Lookup(name)
		if sweep := d.Traits().Sweep; sweep != nil {
			r, err := sweep()
			out = append(out, r...)
			if err != nil {
				errs = append(errs, fmt.Errorf("deployer %s: %w", name, err))
			}
		}
	}
	return out, errors.Join(errs...)
}
