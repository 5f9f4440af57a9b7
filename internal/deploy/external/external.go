// Package external is the deployer of a system that already runs
// (deploy.deployer = "external"): svclab deploys nothing. Before each
// design point it runs the user's setup command, templated with the
// point's levels ({deploy.external.replicas}), waits for the system's
// ready check, and hands the runner its url as the load's target; after
// the point it runs teardown. The processes deploy.external.processes
// names (PIDs, command-line patterns) are sampled for CPU and memory
// as role "external", and one that exits fails the run.
//
// The keys of [deploy.external] are this package's (keys.go): url,
// setup, teardown, setup_timeout, ready and processes; any other key is
// the user's own, a scalar that setup or teardown names in a template,
// so that a factor over it reaches the system.
package external

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
)

// Name is the value of deploy.deployer that selects this deployer.
const Name = "external"

func init() { deploy.Register(deployer{}) }

type deployer struct{}

func (deployer) Name() string { return Name }

func (deployer) Traits() deploy.Traits {
	return deploy.Traits{
		DecodeKeys: func(s *spec.Spec) error {
			_, err := KeysOf(s)
			return err
		},
		CheckSpec: checkSpec,
		Topology:  topology,
		Targets:   []string{Table + ".url"},
		Unmanaged: true,
	}
}

// app stands for the system in the topology: it has no components that
// svclab runs, and no requests of its own ([load] gives them).
var app = &runtime.App{
	Name:      Name,
	Summary:   "a system that already runs, driven at deploy.external.url",
	NewConfig: func() runtime.Config { return system{} },
}

// system is the topology's config: nothing for svclab to run.
type system struct{}

func (system) Validate() error                 { return nil }
func (system) Components() []runtime.Component { return nil }
func (system) Entry() string                   { return "" }
func (system) Requests() []runtime.Request     { return nil }

// topology is Traits.Topology: the system as a topology with no groups,
// whose transport is the load's protocol. It reads no [app]; checkSpec
// refuses one.
func topology(s *spec.Spec) (*runtime.Topology, error) {
	k, _ := KeysOf(s) // its errors are DecodeKeys'
	return &runtime.Topology{
		App:          app,
		Config:       system{},
		Transport:    k.Protocol(),
		Network:      "tcp",
		StartTimeout: s.Deploy.StartTimeout.D(),
		Spec:         s,
	}, nil
}

var ids atomic.Int64

// Deploy runs setup, waits for the system to be ready and finds the
// processes to sample. On error it runs teardown, so that the system is
// left as the next design point expects.
func (deployer) Deploy(ctx context.Context, topo *runtime.Topology, opts deploy.Options) (deploy.Deployment, error) {
	s := topo.Spec
	if s == nil {
		return nil, fmt.Errorf("external: the topology has no spec")
	}
	k, err := KeysOf(s)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(s.Path))
	if err != nil {
		return nil, fmt.Errorf("external: the spec's directory: %w", err)
	}
	d := &deployment{
		id:   fmt.Sprintf("external-%d-%d", os.Getpid(), ids.Add(1)),
		topo: topo,
		keys: k,
		dir:  dir,
		opts: opts,
	}
	if err := d.start(ctx); err != nil {
		return nil, joinTeardown(err, d.teardown(context.WithoutCancel(ctx)))
	}
	return d, nil
}

// deployment is the system between its setup and its teardown.
type deployment struct {
	id    string
	topo  *runtime.Topology
	keys  *Keys
	dir   string
	opts  deploy.Options
	procs []*process

	exited      chan deploy.Process
	stopWatch   context.CancelFunc
	stopOnce    sync.Once
	teardownErr error
}

// start runs setup, waits for ready and starts watching the processes.
func (d *deployment) start(ctx context.Context) error {
	if len(d.keys.Setup) > 0 {
		argv, err := expand(d.topo.Spec, d.keys.Setup)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		if err := run(ctx, "setup", argv, d.dir, d.keys.SetupTimeout, d.opts.Log); err != nil {
			return err
		}
	}
	timeout := d.opts.ReadyTimeout
	if timeout <= 0 {
		timeout = d.topo.StartTimeout
	}
	if err := waitReady(ctx, d.keys, timeout); err != nil {
		return err
	}
	procs, err := findWithin(ctx, d.keys.Processes, processWait)
	if err != nil {
		return err
	}
	d.procs = procs
	// Room for every process's exit: watch never blocks on it.
	d.exited = make(chan deploy.Process, len(procs))
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stopWatch = cancel
	go watch(wctx, procs, d.exited)
	return nil
}

// teardown runs the teardown command, if any.
func (d *deployment) teardown(ctx context.Context) error {
	if len(d.keys.Teardown) == 0 {
		return nil
	}
	argv, err := expand(d.topo.Spec, d.keys.Teardown)
	if err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return run(ctx, "teardown", argv, d.dir, d.keys.SetupTimeout, d.opts.Log)
}

// joinTeardown adds a failed teardown's error to err.
func joinTeardown(err, teardownErr error) error {
	if teardownErr == nil {
		return err
	}
	return fmt.Errorf("%w; and then %w", err, teardownErr)
}

func (d *deployment) ID() string                  { return d.id }
func (d *deployment) Topology() *runtime.Topology { return d.topo }

// Entry is the system's address, with the load's protocol as transport.
func (d *deployment) Entry() runtime.Endpoint {
	return runtime.Endpoint{Transport: d.keys.Protocol(), Network: "tcp", Addr: d.keys.hostport}
}

// GatewayURL is the load's target: the url as [load] reads it (an
// http:// URL for http and h2c, host:port for gRPC). The system has no
// HTTP/JSON gateway of svclab's.
func (d *deployment) GatewayURL() string { return d.keys.Target() }

// Dial connects to a gRPC system with svclab's grpc transport.
func (d *deployment) Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error) {
	if d.keys.Protocol() != protoGRPC {
		return nil, fmt.Errorf("external system %s speaks %s, not gRPC: drive it with [load.request]", d.keys.URL, d.keys.Protocol())
	}
	return deploy.DialEndpoint(ctx, runtime.Endpoint{Transport: "grpc", Network: "tcp", Addr: d.keys.hostport}, opts)
}

// CurlExamples has one command that asks the system's ready path.
func (d *deployment) CurlExamples() []string {
	switch d.keys.Protocol() {
	case protoHTTP:
		return []string{fmt.Sprintf("curl -s %s", d.keys.Target())}
	case protoH2C:
		return []string{fmt.Sprintf("curl -s --http2-prior-knowledge %s", d.keys.Target())}
	}
	return nil
}

// Processes are the named processes, in PID order.
func (d *deployment) Processes() []deploy.Process {
	out := make([]deploy.Process, len(d.procs))
	for i, p := range d.procs {
		out[i] = p
	}
	return out
}

func (d *deployment) Exited() <-chan deploy.Process { return d.exited }

// Stop stops watching and runs teardown, once; ctx bounds teardown too.
func (d *deployment) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() {
		if d.stopWatch != nil {
			d.stopWatch()
		}
		d.teardownErr = d.teardown(ctx)
	})
	return d.teardownErr
}

// Capabilities: the system does none of the optional things; its
// scaling, mesh and faults are its own.
func (d *deployment) Capabilities() deploy.Capabilities { return deploy.Capabilities{} }
