package program

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/autoscaler"
	"github.com/svclab/svclab/internal/deploy/probe"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/tempdir"
)

// stopGrace is the grace between SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// Deploy starts every program of topo (an exec topology: Of(topo) is
// not nil): callees before their callers, each once those it calls are
// healthy. It returns once every program passes its health check; on an
// error, which names the program, its check or its exit status, and its
// last output lines, nothing it started is left running.
func Deploy(ctx context.Context, topo *runtime.Topology, opts deploy.Options) (_ deploy.Deployment, err error) {
	cfg := Of(topo)
	if cfg == nil {
		return nil, fmt.Errorf("program: topology of app %s is not app %s's", topo.App.Name, AppName)
	}
	if removed, err := Sweep(); err != nil {
		return nil, fmt.Errorf("sweep programs of dead svclab processes: %w", err)
	} else if len(removed) > 0 && opts.Log != nil {
		fmt.Fprintf(opts.Log, "[svclab] killed what a killed svclab left: %v\n", removed)
	}
	reader, err := procstat.Open()
	if err != nil {
		return nil, err
	}
	specDir := "."
	if topo.Spec != nil && topo.Spec.Path != "" {
		specDir = filepath.Dir(topo.Spec.Path)
	}
	if specDir, err = filepath.Abs(specDir); err != nil {
		return nil, fmt.Errorf("the spec's directory: %w", err)
	}
	d := &deployment{
		id:      newID(),
		topo:    topo,
		cfg:     cfg,
		specDir: specDir,
		reader:  reader,
		opts:    opts,
		net:     opts.Network,
		exited:  make(chan deploy.Process, len(cfg.Programs)),
		stopCh:  make(chan struct{}),
	}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+time.Second)
			defer cancel()
			_ = d.Stop(sctx)
		}
	}()
	if d.network() == "unix" {
		if d.dir, err = tempdir.MkdirTemp(d.id + "-"); err != nil {
			return nil, fmt.Errorf("deployment %s: the sockets' directory: %w", d.id, err)
		}
	}
	if err := d.bindAddresses(); err != nil {
		return nil, err
	}
	d.peers = map[string]map[string]string{}
	for _, name := range cfg.Names() {
		d.peers[name] = maps.Clone(d.addrs)
	}
	if sc := topo.Spec.Deploy.Sidecar; sc == "" || sc == spec.SidecarNone {
		if err := d.routePeers(); err != nil {
			return nil, fmt.Errorf("deployment %s: %w", d.id, err)
		}
	} else {
		if err := d.layOutSidecars(topo.Spec); err != nil {
			return nil, fmt.Errorf("deployment %s: %w", d.id, err)
		}
		if err := d.startSidecars(ctx, reader, opts); err != nil {
			return nil, fmt.Errorf("deployment %s: %w", d.id, err)
		}
	}
	for _, level := range startOrder(cfg) {
		var started []*process
		for _, name := range level {
			for i := range d.groupOf(name).Replicas {
				p, err := d.startReplica(name, i, specDir, reader, opts)
				if err != nil {
					return nil, err
				}
				d.mu.Lock()
				d.procs = append(d.procs, p)
				d.mu.Unlock()
				started = append(started, p)
			}
		}
		if err := d.waitHealthy(ctx, started, opts.ReadyTimeout); err != nil {
			return nil, fmt.Errorf("deployment %s of %s: %w", d.id, AppName, err)
		}
		now := time.Now()
		for _, p := range started {
			p.readyAt = now
		}
	}
	for _, p := range d.procs {
		go d.watch(p)
	}
	if err := d.startAutoscalers(); err != nil {
		return nil, fmt.Errorf("deployment %s: %w", d.id, err)
	}
	return d, nil
}

// startReplica starts replica i of component name, in its control group
// when it has limits.
func (d *deployment) startReplica(name string, i int, specDir string, reader *procstat.Reader, opts deploy.Options) (*process, error) {
	l, err := d.launch(name, i, specDir, opts)
	if err != nil {
		return nil, err
	}
	lim := limits(d.groupOf(name).Resources, opts.CPUs)
	cg, err := d.confine(&l, lim, d.machineCgroup(name))
	if err != nil {
		return nil, err
	}
	p, err := start(l, func(pid int) deploy.ResourceSource { return reader.Tree(pid) })
	if err != nil {
		if cg != nil {
			_ = cg.Remove()
		}
		return nil, err
	}
	if cg != nil {
		lim := cg.Limits() // what binds it, its machine's included
		p.cg, p.res, p.info.Limits = cg, procstat.CgroupSource{Proc: p.res, Group: cg}, &lim
	}
	p.info.Group, p.info.Components = name, []string{name}
	p.component, p.addr = name, d.replicas[name][i]
	p.listen[name] = d.endpointAt(name, p.addr)
	return p, nil
}

// deployment is the running programs, a deploy.Deployment.
type deployment struct {
	id   string
	topo *runtime.Topology
	cfg  *Config
	// addrs is where each component is reached: its one replica, or the
	// front before its replicas; replicas are each replica's own.
	addrs    map[string]string
	replicas map[string][]string
	fronts   map[string]balancingFront
	// peers are where each program reaches each other component: addrs,
	// or fault proxies; with sidecars each replica's own proxy's outbound
	// listeners stand for them (peersOf, sidecars.go).
	peers map[string]map[string]string
	// hops are the fault proxies before each program a hop fault
	// targets, one per address they forward to (faults.go).
	hops map[string][]*toxiproxy.Proxy

	// net places the programs (deploy.Options.Network); nil for this
	// machine's own network (network.go).
	net deploy.Network
	// dir holds the sidecars' configurations and certificates, or the
	// programs' unix sockets.
	dir  string
	mesh *sidecarMesh // the sidecars, with deploy.sidecar (sidecars.go)

	// specDir, reader and opts start the replicas that scaling adds;
	// scaleMu orders the scales; as are the autoscalers (scale.go).
	specDir string
	reader  *procstat.Reader
	opts    deploy.Options
	scaleMu sync.Mutex
	as      *autoscaler.Autoscalers

	cgroups  *cgroup.Manager // opened for the first program with limits
	mu       sync.Mutex
	procs    []*process
	exited   chan deploy.Process
	stopCh   chan struct{}
	stopOnce sync.Once
	stopErr  error
}

var ids atomic.Int64

func newID() string { return fmt.Sprintf("exec-%d-%d", os.Getpid(), ids.Add(1)) }

// launch expands the command and env of replica i of component name.
func (d *deployment) launch(name string, i int, specDir string, opts deploy.Options) (launch, error) {
	p := d.cfg.Programs[name]
	a := Addresses{Listen: d.replicas[name][i], Peers: d.peersOf(name, i)}
	if d.network() == "tcp" {
		_, a.Port, _ = net.SplitHostPort(a.Listen)
	}
	l := launch{name: d.replicaName(name, i), dir: p.WorkDir(specDir), log: opts.Log, enter: d.enterFor(name)}
	for _, s := range p.Command {
		l.argv = append(l.argv, a.Expand(s))
	}
	l.env = append(os.Environ(), opts.Env...)
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		l.env = append(l.env, k+"="+a.Expand(p.Env[k]))
	}
	l.env = append(l.env, OwnerEnv+"="+ownerMark(), runtime.DeploymentEnv+"="+d.id)
	if _, err := lookCommand(l.argv[0], l.dir); err != nil {
		return launch{}, fmt.Errorf("component %s: command %q: %w", name, l.argv[0], err)
	}
	return l, nil
}

// replicaName names replica i of component name's process: the
// component's name alone when it has one replica, and no autoscaler to
// add more.
func (d *deployment) replicaName(name string, i int) string {
	if g := d.groupOf(name); g.Replicas == 1 && g.Autoscale == nil {
		return name
	}
	return name + "#" + strconv.Itoa(i)
}

// groupOf is the topology's group of component name.
func (d *deployment) groupOf(name string) runtime.Group {
	return d.topo.Groups[d.topo.GroupOf(name)]
}

// endpoint is where component name is reached.
func (d *deployment) endpoint(name string) runtime.Endpoint {
	return d.endpointAt(name, d.addrs[name])
}

// bindAddresses picks an address for every replica of every component
// (network.go: a free port, or a socket's path), and puts a front
// (internal/deploy/front) before the replicas of a component that has
// several: its callers and the load reach it there. Each program binds
// its own address (it cannot be handed a socket): should another process
// take a port in between, the program fails to bind, and its error says
// so.
func (d *deployment) bindAddresses() error {
	d.addrs, d.replicas, d.fronts = map[string]string{}, map[string][]string{}, map[string]balancingFront{}
	var open []io.Closer
	defer func() {
		for _, l := range open {
			_ = l.Close()
		}
	}()
	for _, name := range d.cfg.Names() {
		for i := range d.groupOf(name).Replicas {
			addr, hold, err := d.pickAddress(name, i)
			if err != nil {
				return err
			}
			if hold != nil {
				open = append(open, hold) // held until all are picked: no two alike
			}
			d.replicas[name] = append(d.replicas[name], addr)
		}
		if len(d.replicas[name]) == 1 && d.groupOf(name).Autoscale == nil {
			d.addrs[name] = d.replicas[name][0]
			continue
		}
		f, err := startFront(d.cfg.Programs[name].Protocol, d.replicas[name])
		if err != nil {
			return fmt.Errorf("component %s: %w", name, err)
		}
		d.fronts[name] = f
		d.addrs[name] = f.Addr()
	}
	return nil
}

// startOrder groups the components into levels: each level's components
// call only components of earlier levels. Components of a cycle start
// together, last.
func startOrder(cfg *Config) [][]string {
	placed := map[string]bool{}
	var out [][]string
	left := cfg.Names()
	for len(left) > 0 {
		var level, rest []string
		for _, name := range left {
			ready := true
			for _, dep := range cfg.Programs[name].Deps() {
				ready = ready && placed[dep]
			}
			if ready {
				level = append(level, name)
			} else {
				rest = append(rest, name)
			}
		}
		if len(level) == 0 {
			level, rest = rest, nil
		}
		for _, name := range level {
			placed[name] = true
		}
		out = append(out, level)
		left = rest
	}
	return out
}

// waitHealthy waits for each of procs to pass its health check within its
// start timeout, and fails at the first that exits or times out.
func (d *deployment) waitHealthy(ctx context.Context, procs []*process, readyTimeout time.Duration) error {
	errs := make(chan error, len(procs))
	for _, p := range procs {
		go func() { errs <- d.waitOne(ctx, p, readyTimeout) }()
	}
	var all []error
	for range procs {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

func (d *deployment) waitOne(ctx context.Context, p *process, readyTimeout time.Duration) error {
	name := p.info.Name
	c := d.cfg.Programs[p.component]
	timeout, key := c.StartTimeout.D(), "app.components."+p.component+".start_timeout"
	if timeout <= 0 {
		timeout, key = readyTimeout, "the deployment's ready timeout"
		if timeout <= 0 {
			timeout, key = d.topo.StartTimeout, "deploy.start_timeout"
		}
		if timeout <= 0 {
			timeout = spec.DefaultStartTimeout
		}
	}
	pr := d.probeOf(p.component, p.addr)
	err := p.await(ctx, pr, timeout)
	switch {
	case p.exited():
		return fmt.Errorf("component %s exited before it was healthy: %w", name, p.Exit())
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("component %s: %s: %w", name, pr, ctx.Err())
	case err != nil:
		return fmt.Errorf("component %s is not healthy after %s (%s): %s: %w; last output:\n%s", name, timeout, key, pr, err, deploy.IndentTail(p.Tail()))
	}
	return nil
}

// await checks pr until it passes, p exits or timeout ends, and returns
// the last check's error.
func (p *process) await(ctx context.Context, pr probe.Probe, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wctx, stopWait := context.WithCancel(cctx)
	defer stopWait()
	go func() {
		select {
		case <-p.done:
			stopWait()
		case <-wctx.Done():
		}
	}()
	return pr.Wait(wctx)
}

// watch reports a program that exits before Stop, unless a kill fault
// ended it, and takes a replica that exits out of its front.
func (d *deployment) watch(p *process) {
	select {
	case <-p.done:
		d.updateFront(p.component)
		if p.retired.Load() {
			return
		}
		select {
		case <-d.stopCh:
		case d.exited <- p:
		}
	case <-d.stopCh:
	}
}

func (d *deployment) ID() string                  { return d.id }
func (d *deployment) Topology() *runtime.Topology { return d.topo }

// Entry is where the entry program listens.
func (d *deployment) Entry() runtime.Endpoint { return d.endpoint(d.cfg.EntryName) }

// GatewayURL is the load's target: the entry's http:// URL (http, h2c),
// its host:port (grpc), or its unix socket's target (load.UnixTarget).
// Programs have no gateway of svclab's.
func (d *deployment) GatewayURL() string {
	addr := d.addrs[d.cfg.EntryName]
	switch {
	case d.network() == "unix":
		return load.UnixTarget(addr)
	case d.cfg.Programs[d.cfg.EntryName].Protocol == ProtoGRPC:
		return addr
	}
	return "http://" + addr
}

// Dial connects to a gRPC entry with svclab's grpc transport.
func (d *deployment) Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error) {
	e := d.Entry()
	if e.Transport != ProtoGRPC {
		return nil, fmt.Errorf("entry %s speaks %s, not gRPC: drive it with [load.request]", d.cfg.EntryName, e.Transport)
	}
	return deploy.DialEndpoint(ctx, e, opts)
}

// CurlExamples call an HTTP entry at the path the load sends a GET to
// ([load.request]), else at its health path, or its root.
func (d *deployment) CurlExamples() []string {
	c := d.cfg.Programs[d.cfg.EntryName]
	url := d.GatewayURL()
	if d.network() == "unix" {
		url = "--unix-socket " + d.addrs[d.cfg.EntryName] + " http://localhost"
	}
	switch c.Protocol {
	case ProtoHTTP:
		return []string{"curl " + url + d.tryPath(c)}
	case ProtoH2C:
		return []string{"curl --http2-prior-knowledge " + url + d.tryPath(c)}
	}
	return nil
}

// tryPath is where CurlExamples call the entry c: the path of
// [load.request]'s GET (another method, or a path of {{variables}}, needs
// more than a path to be right), else its health path, or its root.
func (d *deployment) tryPath(c *Component) string {
	if s := d.topo.Spec; s != nil {
		method, _ := s.Lookup("load.request.method")
		path, _ := s.Lookup("load.request.path")
		if m, _ := method.(string); m == "" || strings.EqualFold(m, http.MethodGet) {
			if p, _ := path.(string); strings.HasPrefix(p, "/") && !strings.Contains(p, "{{") {
				return p
			}
		}
	}
	if h := c.HealthOf(); len(h) > 0 && h[0] == '/' {
		return h
	}
	return "/"
}

func (d *deployment) Processes() []deploy.Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]deploy.Process, len(d.procs))
	for i, p := range d.procs {
		out[i] = p
	}
	return out
}

func (d *deployment) Exited() <-chan deploy.Process { return d.exited }

// Capabilities: programs speak their own protocols (Describe names them,
// and shows no gateway of svclab's), and suffer [deploy.faults]
// (faults.go), and their autoscalers' decisions (scale.go); with
// sidecars, the proxies' telemetry (sidecars.go).
func (d *deployment) Capabilities() deploy.Capabilities {
	return deploy.Capabilities{Programs: d, Killer: d, HopFaults: d, Scaling: d}.Over(d.meshCapabilities())
}

// Protocols maps each component to what its program speaks.
func (d *deployment) Protocols() map[string]string {
	out := make(map[string]string, len(d.cfg.Programs))
	for name, c := range d.cfg.Programs {
		out[name] = c.Protocol
	}
	return out
}

// Stop ends every program at once: SIGTERM, then SIGKILL to its process
// group after the grace. The error names the programs that had
// to be killed.
func (d *deployment) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() {
		d.as.Stop() // waits for a scale in progress
		close(d.stopCh)
		d.mesh.beforeStop(ctx)
		d.mu.Lock()
		procs := slices.Clone(d.procs)
		d.mu.Unlock()
		errs := make([]error, len(procs))
		var wg sync.WaitGroup
		for i, p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.stop(ctx, stopGrace)
			}()
		}
		wg.Wait()
		errs = append(errs, d.mesh.stop(ctx))
		d.closeHops()
		for _, name := range slices.Sorted(maps.Keys(d.fronts)) {
			errs = append(errs, d.fronts[name].Close())
		}
		if d.dir != "" {
			errs = append(errs, os.RemoveAll(d.dir))
		}
		if err := errors.Join(errs...); err != nil {
			d.stopErr = fmt.Errorf("deployment %s: stop: %w", d.id, err)
		}
	})
	return d.stopErr
}
