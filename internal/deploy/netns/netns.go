// Package netns is the netns deployer: it runs each emulated machine of a spec
// ([deploy.hosts.<name>]) in a Linux network namespace of its own, joined to
// the other machines and to the load generator's namespace by veth pairs on a
// bridge, and emulates the links between them ([deploy.link],
// [deploy.links."a-b"]).
//
// The hosts' processes are the local deployer's: this deployer looks
// "local" up by name and hands it a deploy.Network that binds each group's
// listeners in its machine's namespace, starts its process there, and tells
// each group which address stands for a peer on another host. So health
// checks, output tails, resource sampling and the control channel are the
// local deployer's, and the parent-death signal still takes every host
// with a killed svclab. The exec app's programs, which the local deployer
// hands to internal/deploy/program, are placed through the same network:
// each starts in its machine's namespace and reaches its callees at the
// addresses the network gives (connectProgram gives the client its path
// to the entry program).
//
// This kernel has no netem, so a link's latency, jitter and loss are
// emulated in user space: a shaped link gets a proxy per path (toxiproxy,
// used as a library, with a toxic of this package's that works in
// nanoseconds), listening in the router namespace that holds the bridge.
// An unshaped link has no proxy: traffic goes machine to machine over the
// bridge, except on the paths into a group a hop fault of
// [deploy.faults] targets, which always carry one (hopfaults.go).
// Bandwidth is limited in the kernel, with htb classes on the caller's
// veth (shape.go).
//
// Namespaces carry their owner's PID and start time in their names
// (ns.go), so what a svclab killed with -9 left is removed by the next
// deployment's start and by `svclab clean`. Creating namespaces needs root.
package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netns"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
)

// Name is the value of deploy.deployer that selects this deployer.
const Name = "netns"

// hostDeployer is the deployer that starts the hosts' processes.
const hostDeployer = "local"

func init() { deploy.Register(deployer{}) }

type deployer struct{}

func (deployer) Name() string { return Name }

// Traits implements deploy.Deployer: the machines and links of a spec are
// checked against its topology (check.go), this machine is checked for
// what the processes need by the deployer that starts them (its language
// hosts, or the exec app's commands), and the namespaces of dead svclab
// processes are swept.
func (deployer) Traits() deploy.Traits {
	return deploy.Traits{DecodeKeys: decodeKeys, CheckSpec: checkSpec, CheckMachine: checkMachine, Sweep: sweepDead}
}

// checkMachine is the host deployer's Traits.CheckMachine: its processes
// start on this machine, in the machines' namespaces.
func checkMachine(s *spec.Spec, topo *runtime.Topology) error {
	local, err := deploy.Lookup(hostDeployer)
	if err != nil {
		return fmt.Errorf("deployer %s runs its machines with %w", Name, err)
	}
	if check := local.Traits().CheckMachine; check != nil {
		return check(s, topo)
	}
	return nil
}

// sweepDead removes the namespaces of dead svclab processes
// (Traits.Sweep). Without root there is nothing it could have made, nor
// remove.
func sweepDead() ([]string, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	return sweep()
}

// ErrNotRoot is the error of a deployment by a user who cannot create
// network namespaces.
var ErrNotRoot = errors.New("the netns deployer needs root: it creates network namespaces, veths and a bridge (run svclab as root, or use deploy.deployer = \"local\")")

func (d deployer) Deploy(ctx context.Context, topo *runtime.Topology, opts deploy.Options) (_ deploy.Deployment, err error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	p, err := newLayout(topo.Spec, topo)
	if err != nil {
		return nil, err
	}
	local, err := deploy.Lookup(hostDeployer)
	if err != nil {
		return nil, fmt.Errorf("deployer %s runs its machines with %w", Name, err)
	}
	if _, err := sweep(); err != nil && opts.Log != nil {
		fmt.Fprintln(opts.Log, "svclab: warning:", err)
	}
	start := time.Now()
	n, err := buildNetwork(p.machines)
	if err != nil {
		return nil, fmt.Errorf("deployer %s: %w", Name, err)
	}
	dep := &Deployment{layout: p, topo: topo, net: n, shaper: newShaper(), peers: map[string]*proxy{}}
	defer func() {
		if err != nil {
			if dep.Deployment != nil {
				err = errors.Join(err, dep.Deployment.Stop(context.WithoutCancel(ctx)))
			}
			err = errors.Join(err, dep.teardown())
		}
	}()
	if dep.machinecg, err = machineCgroups(p, opts.CPUs); err != nil {
		return nil, fmt.Errorf("deployer %s: %w", Name, err)
	}
	opts.Network = (*placement)(dep)
	inner, err := local.Deploy(ctx, topo, opts)
	if err != nil {
		return nil, err
	}
	dep.Deployment = inner
	if err := dep.connectClient(); err != nil {
		return nil, fmt.Errorf("deployment %s: client: %w", inner.ID(), err)
	}
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "deployment %s: %s in network namespaces %s* (set up in %s)\n", inner.ID(), english.Count(len(p.machines), "host"), n.names.base, time.Since(start).Round(time.Millisecond))
	}
	return dep, nil
}

// Deployment is a running topology over emulated machines: the local
// deployment of its processes, and the network around them.
type Deployment struct {
	deploy.Deployment
	layout    *layout
	topo      *runtime.Topology // known before the local deployment is
	net       *network
	shaper    *shaper
	machinecg []*cgroup.Group // per machine; nil entries for machines without cpus or memory (machinecg.go)

	mu    sync.Mutex
	peers map[string]*proxy // "from→addr" → the proxy for that path
	// others are the client's proxies and the gateway's forwarder.
	others []*proxy

	faults hopFaults // the paths into groups [deploy.faults] targets (hopfaults.go)

	entry      runtime.Endpoint // the entry as the client reaches it
	gatewayURL string           // a forwarder in svclab's own namespace

	stopOnce sync.Once
	stopErr  error
}

// Entry is where the client calls the entry component: an address it
// reaches from its own namespace (Dial opens connections there).
func (d *Deployment) Entry() runtime.Endpoint { return d.entry }

// GatewayURL is the HTTP/JSON gateway as svclab's own namespace reaches
// it: a loopback forwarder that connects from the client's namespace, so
// a request through it crosses the client's link too.
func (d *Deployment) GatewayURL() string { return d.gatewayURL }

// Dial connects to the entry from the client's namespace.
func (d *Deployment) Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error) {
	if d.replicatedEntry() {
		opts.Dialer = (*placement)(d).DialClient
		return d.Deployment.Dial(ctx, opts) // a balancer over the replicas (entry.go)
	}
	opts.Dialer = d.ClientDialer()
	return deploy.DialEndpoint(ctx, d.entry, opts)
}

// ClientDialer opens connections from the client's namespace.
func (d *Deployment) ClientDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialIn(ctx, d.net.client.ns, network, addr)
	}
}

// CurlExamples call the gateway through its forwarder.
func (d *Deployment) CurlExamples() []string {
	inner := d.Deployment.GatewayURL()
	var out []string
	for _, ex := range d.Deployment.CurlExamples() {
		out = append(out, strings.ReplaceAll(ex, inner, d.gatewayURL))
	}
	return out
}

// Machines names the emulated machines, in the spec's order.
func (d *Deployment) Machines() []string { return d.layout.machines }

// Namespaces are the paths of the deployment's network namespaces (in
// /run/netns), which Stop removes.
func (d *Deployment) Namespaces() []string {
	var out []string
	for _, n := range d.net.created {
		out = append(out, filepath.Join(runNetns, n))
	}
	return out
}

// MachineOf names the machine of a group.
func (d *Deployment) MachineOf(group int) string { return d.layout.machines[d.layout.machineOf[group]] }

// Stop stops the processes, then the proxies, then removes every namespace
// (and with them the veths, the bridge and the shaping).
func (d *Deployment) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() {
		var errs []error
		if d.Deployment != nil {
			errs = append(errs, d.Deployment.Stop(ctx))
		}
		errs = append(errs, d.teardown())
		d.stopErr = errors.Join(errs...)
	})
	return d.stopErr
}

func (d *Deployment) teardown() error {
	var errs []error
	d.mu.Lock()
	for _, p := range d.peers {
		errs = append(errs, p.close())
	}
	for _, p := range d.others {
		errs = append(errs, p.close())
	}
	d.peers, d.others = nil, nil
	d.mu.Unlock()
	d.shaper.close()
	errs = append(errs, removeMachineCgroups(d.machinecg))
	errs = append(errs, d.net.close())
	return errors.Join(errs...)
}

// connectClient gives the client its view of the entry and the gateway.
func (d *Deployment) connectClient() error {
	topo := d.Topology()
	eg := topo.EntryGroup()
	if d.Deployment.Capabilities().Programs != nil {
		return d.connectProgram(eg)
	}
	listeners := d.Processes()[eg].Listeners()
	gw, ok := listeners["gateway"]
	if !ok {
		return errors.New("the entry group has no gateway")
	}
	gwClient, err := d.path(d.net.client, d.layout.machineOf[eg], -1, gw)
	if err != nil {
		return err
	}
	if topo.InProcess() {
		d.entry = gwClient
	} else {
		ep, ok := listeners[topo.Entry]
		if !ok {
			return fmt.Errorf("the entry group serves no %s", topo.Entry)
		}
		if d.entry, err = d.path(d.net.client, d.layout.machineOf[eg], -1, ep); err != nil {
			return err
		}
	}
	if d.replicatedEntry() {
		// The local deployer's front spreads over every live replica,
		// dialling through the client (entry.go).
		d.gatewayURL = d.Deployment.GatewayURL()
		return nil
	}
	fwd, err := d.forward("gateway", gwClient.Addr)
	if err != nil {
		return err
	}
	d.gatewayURL = "http://" + fwd
	return nil
}

// connectProgram gives the client its view of the entry program of
// group eg (the exec app's, which has no gateway of svclab's): its
// address across the client's link, and, for the load, a forwarder in
// svclab's own namespace that connects from the client's, in place of the
// address in the inner deployment's URL.
func (d *Deployment) connectProgram(eg int) error {
	inner := d.Deployment.Entry()
	var err error
	if d.entry, err = d.path(d.net.client, d.layout.machineOf[eg], -1, inner); err != nil {
		return err
	}
	fwd, err := d.forward("entry", d.entry.Addr)
	if err != nil {
		return err
	}
	d.gatewayURL = strings.Replace(d.Deployment.GatewayURL(), inner.Addr, fwd, 1)
	return nil
}

// forward starts a forwarder on svclab's loopback to addr, which it
// dials from the client's namespace, and returns its address.
func (d *Deployment) forward(name, addr string) (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("%s forwarder: %w", name, err)
	}
	fwd := newProxy(name, lis, addr, func(ctx context.Context) (net.Conn, error) {
		return dialIn(ctx, d.net.client.ns, "tcp", addr)
	})
	d.mu.Lock()
	d.others = append(d.others, fwd)
	d.mu.Unlock()
	fwd.serve()
	return fwd.addr(), nil
}

// path is the endpoint from reaches ep of group (-1: the entry, for the
// client) on machine to by: ep itself on the same machine or over an unshaped
// link, else a proxy for the link; and a proxy on any path into a group a
// hop fault targets (hopfaults.go).
func (d *Deployment) path(from *endpoint, to, group int, ep runtime.Endpoint) (runtime.Endpoint, error) {
	toMachine := d.net.machines[to]
	faulted := d.faulted(group)
	var link Link
	if from != toMachine {
		link = d.layout.link(from.name, toMachine.name)
	}
	if !link.Shaped() && !faulted {
		return ep, nil
	}
	key := from.name + "→" + ep.Addr
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.peers[key]; ok {
		ep.Addr = p.addr()
		return ep, nil
	}
	// A path between two groups of one machine stays inside the machine's
	// namespace; one between machines goes through the router.
	via, ip := d.net.router, routerIP
	if from == toMachine {
		via, ip = from.ns, from.ip
	}
	lis, err := listenIn(via, ip+":0")
	if err != nil {
		return ep, fmt.Errorf("proxy for %s: %w", key, err)
	}
	upstream := ep.Addr
	p := newProxy(key, lis, upstream, func(ctx context.Context) (net.Conn, error) {
		return dialIn(ctx, via, "tcp", upstream)
	})
	if err := addLinkToxics(p.tp, link); err != nil {
		_ = p.close()
		return ep, fmt.Errorf("proxy for %s: %w", key, err)
	}
	if link.Bandwidth > 0 {
		port := lis.Addr().(*net.TCPAddr).Port
		if err := d.shaper.limit(d.net.router, from, from.name+"-"+toMachine.name, uint64(link.Bandwidth), port); err != nil {
			_ = p.close()
			return ep, err
		}
	}
	if faulted {
		if err := d.addFaultHop(group, p.tp); err != nil {
			_ = p.close()
			return ep, fmt.Errorf("proxy for %s: %w", key, err)
		}
	}
	d.peers[key] = p
	p.serve()
	ep.Addr = p.addr()
	return ep, nil
}

// placement is the deployment as the local deployer's deploy.Network.
type placement Deployment

func (pl *placement) d() *Deployment { return (*Deployment)(pl) }

// Listen binds a listener on group's machine address, in its namespace.
func (pl *placement) Listen(group int) (net.Listener, error) {
	h := pl.net.machines[pl.layout.machineOf[group]]
	l, err := listenIn(h.ns, h.ip+":0")
	if err != nil {
		return nil, fmt.Errorf("listen on machine %s: %w", h.name, err)
	}
	return l, nil
}

// Peer is the address group from dials for ep of group to.
func (pl *placement) Peer(from, to int, ep runtime.Endpoint) (runtime.Endpoint, error) {
	return pl.d().path(pl.net.machines[pl.layout.machineOf[from]], pl.layout.machineOf[to], to, ep)
}

// Enter moves the spawner's thread into group's machine namespace.
func (pl *placement) Enter(group int) (func() error, error) {
	h := pl.net.machines[pl.layout.machineOf[group]]
	orig, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("current network namespace: %w", err)
	}
	if err := netns.Set(h.ns); err != nil {
		orig.Close()
		return nil, fmt.Errorf("enter machine %s's namespace: %w", h.name, err)
	}
	return func() error {
		defer orig.Close()
		return netns.Set(orig)
	}, nil
}

// Dial connects from the router namespace, which reaches every machine, for
// the local deployer's health checks.
func (pl *placement) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, pl.net.router, network, addr)
}

// DescribeMore lists the machines, their groups and the links between them
// (deploy.Capabilities.Describer).
func (d *Deployment) DescribeMore(w io.Writer) {
	groups := make([][]string, len(d.layout.machines))
	for g, h := range d.layout.machineOf {
		groups[h] = append(groups[h], d.Topology().Groups[g].Name)
	}
	for i, h := range d.layout.machines {
		fmt.Fprintf(w, "machine %s: %s, groups %s%s (namespace %s)\n", h, d.net.machines[i].ip, strings.Join(groups[i], ", "), limitsText(d.MachineLimits()[i]), d.net.names.host(i))
	}
	names := append([]string{clientName}, d.layout.machines...)
	for i, a := range names {
		for _, b := range names[i+1:] {
			l := d.layout.link(a, b)
			if !l.Shaped() {
				continue
			}
			fmt.Fprintf(w, "link %s-%s: latency %s, jitter %s, loss %g, bandwidth %s\n", a, b, l.Latency, l.Jitter, l.Loss, bandwidthText(l.Bandwidth))
		}
	}
}

func bandwidthText(b Bandwidth) string {
	if b == 0 {
		return "unlimited"
	}
	return b.String()
}
