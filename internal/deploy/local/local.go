// Package local is the local deployer: it runs each group of a resolved topology
// as a child process on this machine, wired together over loopback TCP or
// unix sockets.
//
// Every child re-executes the svclab binary as `svclab host`, with its
// hostv1.HostConfig (the host protocol) in the environment. The deployer
// binds every listening socket itself before it starts any child and hands
// each child its own sockets as inherited file descriptors, so all addresses
// are known up front, no port can be taken by someone else in between, and a
// peer can connect before its host has started accepting.
//
// Nothing outlives the deployer: each child runs in its own process group
// (so a terminal's Ctrl-C reaches only svclab, which then stops the children
// in order), and has a parent-death signal of SIGKILL, so even `kill -9` of
// svclab takes the children with it.
//
// The package registers itself as the deployer "local"; callers other than
// its tests and the binary's wiring use it through package deploy.
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/autoscaler"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/front"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/deploy/hostmesh"
	"github.com/svclab/svclab/internal/deploy/ingress/nginx"
	"github.com/svclab/svclab/internal/deploy/langhost"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/deploy/program"
	"github.com/svclab/svclab/internal/deploy/proxies"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/tempdir"
)

// Name is the value of deploy.deployer that selects this deployer.
const Name = "local"

func init() { deploy.Register(deployer{}) }

// deployer is the local deployer in the registry.
type deployer struct{}

func (deployer) Name() string { return Name }

func (deployer) Deploy(ctx context.Context, topo *runtime.Topology, opts deploy.Options) (deploy.Deployment, error) {
	if program.Of(topo) != nil {
		return program.Deploy(ctx, topo, opts) // programs of the exec app, not svclab hosts
	}
	d, err := Deploy(ctx, topo, Options{Options: opts})
	if err != nil {
		return nil, err // not a nil *Deployment in an interface
	}
	return d, nil
}

// Defaults of Options.
const (
	DefaultStopTimeout = 5 * time.Second
	DefaultTailLines   = 40
	// maxLine bounds one recorded line of child output; longer lines are
	// cut, so a child printing without newlines cannot grow the buffer.
	maxLine = 4096
)

// Options tune a deployment: the options every deployer takes, and the
// local deployer's own. The zero value is ready to use.
type Options struct {
	deploy.Options
	// Args follow the executable. By default the deployer starts the
	// lean host binary beside the executable when there is one built from
	// the same source (hostentry.Command: svclab-host beside svclab), and
	// else the executable with ["host"]. The deployer appends
	// --deployment ID --group NAME, which also make `ps` readable.
	Args []string
	// StopTimeout is the grace between SIGTERM and SIGKILL in Stop.
	StopTimeout time.Duration
	// TailLines is how many of each child's last output lines are kept.
	TailLines int
}

// Deployment is a running topology, a deploy.Deployment. Its methods are
// safe for concurrent use.
type Deployment struct {
	id         string
	topo       *runtime.Topology
	entry      runtime.Endpoint
	gateway    runtime.Endpoint
	gatewayURL string

	// mu guards processes, every replica of every group (replicas.go);
	// scaleMu serialises Scale.
	mu          sync.Mutex
	processes   []*process
	nextOrdinal []int
	scaleMu     sync.Mutex
	pushMu      sync.Mutex // serialises endpoint-set pushes (replicas.go)
	cfgJSON     []byte
	opts        Options
	as          *autoscaler.Autoscalers    // nil until the deployment is ready (autoscale.go)
	clients     []entryClient              // balancers over the entry's replicas (dial.go)
	sidecars    *proxies.Proxies[*process] // the proxies, when deploy.sidecar names one (proxies.go)

	dir         string
	cpus        string           // deploy.Options.CPUs: every process's CPU list
	mesh        *hostmesh.Mesh   // nil without in-process mesh features (mesh.go)
	ownBacking  *backing.Pool    // started for this deployment alone
	ingress     *nginx.Server    // app.ingress, in front of the gateway
	front       *front.HTTP      // the gateway of a replicated entry (gatewayfront.go)
	proc        *procstat.Reader // the children's resource counters
	stopTimeout time.Duration
	net         deploy.Network // nil: this machine's own network
	spawn       *spawner
	langs       map[string][]string // language → its host's command (languages.go)
	stopOnce    sync.Once
	stopErr     error
	stopping    chan struct{}
	exited      chan deploy.Process
	hops        faultHops // proxies for [deploy.faults] (faults.go)
}

// ID marks every process of the deployment: it is in their arguments
// (--deployment ID) and environment (runtime.DeploymentEnv).
func (d *Deployment) ID() string { return d.id }

// Topology is the topology deployed.
func (d *Deployment) Topology() *runtime.Topology { return d.topo }

// Entry is where clients call the entry component over the configured
// transport. With the inproc transport, which cannot leave its process, it
// is the gateway.
func (d *Deployment) Entry() runtime.Endpoint { return d.entry }

// Gateway serves the entry component as HTTP/JSON (the http transport, on
// TCP).
func (d *Deployment) Gateway() runtime.Endpoint { return d.gateway }

// GatewayURL is the gateway's base URL: POST GatewayURL +
// "/<package.Service>/<Method>" with a protojson body.
func (d *Deployment) GatewayURL() string { return d.gatewayURL }

// Processes has one entry per replica of each group, in the topology's
// order at the start; replicas started later follow.
func (d *Deployment) Processes() []deploy.Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]deploy.Process, len(d.processes))
	for i, p := range d.processes {
		out[i] = p
	}
	return out
}

// Exited delivers each process that exits before Stop is called, so that a
// foreground command can notice a crash.
func (d *Deployment) Exited() <-chan deploy.Process { return d.exited }

// Deploy starts one child per group of p and waits until each passes its
// health checks over its own transport (the gateway over http). ctx bounds
// the start only; the deployment runs until Stop. If a child exits or is not
// ready within the timeout, everything started is stopped and the error
// (wrapping a *deploy.ExitError or a *readiness.NotReadyError) names the group, its
// components, its exit status and its last output lines.
func Deploy(ctx context.Context, p *runtime.Topology, opts Options) (_ *Deployment, err error) {
	if opts.Executable == "" {
		if opts.Executable, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the svclab executable: %w", err)
		}
	}
	if opts.Args == nil {
		// The lean host binary beside svclab, when it was built with it.
		opts.Executable, opts.Args = hostentry.Command(opts.Executable)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = p.StartTimeout
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = spec.DefaultStartTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.TailLines <= 0 {
		opts.TailLines = DefaultTailLines
	}
	cfgJSON, err := p.ConfigJSON()
	if err != nil {
		return nil, err
	}
	proc, err := procstat.Open()
	if err != nil {
		return nil, err
	}

	d := &Deployment{
		id:          newID(),
		topo:        p,
		proc:        proc,
		stopTimeout: opts.StopTimeout,
		net:         opts.Network,
		cpus:        opts.CPUs,
		stopping:    make(chan struct{}),
		exited:      make(chan deploy.Process, len(p.Groups)),
		nextOrdinal: make([]int, len(p.Groups)),
		cfgJSON:     cfgJSON,
		opts:        opts,
	}
	if d.dir, err = tempdir.MkdirTemp(d.id + "-"); err != nil {
		return nil, fmt.Errorf("deployment %s: temp dir: %w", d.id, err)
	}
	if d.langs, err = langhost.Commands(p); err != nil {
		return nil, fmt.Errorf("deployment %s: %w", d.id, err)
	}
	d.spawn = newSpawner()
	defer func() {
		if err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), opts.StopTimeout+time.Second)
			defer cancel()
			_ = d.Stop(stopCtx)
		}
	}()

	if opts.Env, err = d.backing(ctx, &opts); err != nil {
		return nil, err
	}
	d.opts.Env = opts.Env
	meshCtx, cancelMesh := context.WithTimeout(ctx, opts.ReadyTimeout)
	d.mesh, err = d.newMesh(meshCtx)
	cancelMesh()
	if err != nil {
		return nil, err
	}
	if err := d.startAll(ctx, cfgJSON); err != nil {
		return nil, err
	}

	readyCtx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	if err := d.waitReady(readyCtx, d.processes); err != nil {
		return nil, fmt.Errorf("deployment %s of %s: %w", d.id, p.App.Name, err)
	}
	// Ready once the telemetry sees every host: Prometheus has scraped
	// each.
	if err := d.mesh.Telemetry().AwaitScraping(readyCtx); err != nil {
		return nil, err
	}
	if err := d.startGatewayFront(); err != nil {
		return nil, err
	}
	if err := d.startIngress(readyCtx); err != nil {
		return nil, err
	}
	now := time.Now()
	for _, p := range d.processes {
		p.readyAt = now
		d.watchProcess(p)
	}
	if err := d.startAutoscalers(); err != nil {
		return nil, err
	}
	return d, nil
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var logMu sync.Mutex

// Stop ends every child: SIGTERM to its process group, then SIGKILL for
// any still running after StopTimeout (or when ctx ends). It removes the
// deployment's temp dir and returns an error naming the children that had
// to be killed or exited with an error. It is safe to call more than once.
func (d *Deployment) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() { d.stopErr = d.stop(ctx) })
	return d.stopErr
}

func (d *Deployment) stop(ctx context.Context) error {
	close(d.stopping)
	d.as.Stop()
	// A Scale in progress finishes first, so that no replica starts
	// after the others are stopped.
	d.scaleMu.Lock()
	defer d.scaleMu.Unlock()
	d.mesh.Telemetry().BeforeStop(ctx)
	var errs []error
	if d.ingress != nil {
		if err := d.ingress.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := d.stopGatewayFront(); err != nil {
		errs = append(errs, err)
	}
	d.mu.Lock()
	procs := slices.Clone(d.processes)
	d.mu.Unlock()
	for _, p := range procs {
		signalGroup(p, syscall.SIGTERM)
	}
	grace := time.NewTimer(d.stopTimeout)
	defer grace.Stop()
wait:
	for _, p := range procs {
		select {
		case <-p.done:
		case <-grace.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
			if p.waitErr != nil && !killedBy(p.waitErr, syscall.SIGTERM) {
				errs = append(errs, p.Exit())
			}
			continue
		default:
		}
		signalGroup(p, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			// SIGKILL cannot be ignored; only an unkillable (D state)
			// process gets here.
		}
		errs = append(errs, fmt.Errorf("%s did not stop on SIGTERM within %s and was killed; last output:\n%s", p.info, d.stopTimeout, deploy.IndentTail(p.Tail())))
	}
	d.closeHops()
	// The hosts have stopped, and so exported their last spans.
	var services []string
	for _, g := range d.topo.Groups {
		services = append(services, g.Name)
	}
	if err := d.mesh.Telemetry().Stop(ctx, services); err != nil {
		errs = append(errs, err)
	}
	if d.spawn != nil {
		d.spawn.close()
	}
	for _, p := range procs {
		if p.cg != nil {
			if err := p.cg.Remove(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if d.ownBacking != nil {
		if err := d.ownBacking.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	d.sidecars.Release()
	if d.dir != "" {
		if err := os.RemoveAll(d.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d.dir, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deployment %s: stop: %w", d.id, errors.Join(errs...))
	}
	return nil
}
