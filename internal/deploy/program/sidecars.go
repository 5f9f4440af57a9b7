package program

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/deploy/probe"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/deploy/telemetry"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/tempdir"
)

// Sidecars (deploy.sidecar) bring the mesh to programs that know nothing
// of svclab, as Istio does: each replica of each program has its own
// proxy, through whose outbound listeners it calls each callee
// ({addr:<name>} is its own proxy's listener), which balance over the
// inbound listeners of the callee's live replicas' proxies (through the
// callee's fault proxies when a hop fault targets it: faults.go), each of
// which forwards to its own replica. When the replicas change (a scale,
// a kill, a death: updateFront), every caller's proxy is told its new
// upstreams while it runs (sidecar.Live), as Istio's control plane pushes
// endpoints to Envoy. With deploy.mtls the proxy-to-proxy leg is mutual
// TLS with each program's SPIFFE identity from a per-deployment CA
// (internal/pki), so a client without the run's certificate is refused at
// every inbound listener; the program-to-proxy legs stay plaintext on
// loopback. The load enters the mesh at the entry's proxy, on an ingress
// listener of its own that takes plaintext as an ingress gateway would
// (through the front before the entry's replicas when it has several).
// A proxy's listeners speak one protocol, so a replica whose listeners
// speak two has a proxy for each.
//
// With deploy.tracing the proxies' spans stand for the programs', which
// emit none (telemetry.TraceApp): each request's trace begins at the
// entry's ingress listener, and a program that forwards the trace
// context it is handed (traceparent, which Envoy's OpenTelemetry tracer
// reads) to its callees joins their proxies' spans to it, as under
// Istio; one that does not starts a trace of its own on every call it
// makes. With
// deploy.metrics the run's Prometheus scrapes every proxy's stats
// (telemetry.EnvoyStats), labelled with the program it sits beside and
// the component each listener leads to (Series).

// sidecarKinds are the proxies programs can have.
var sidecarKinds = []string{spec.SidecarEnvoy}

// protocolOf is what a proxy speaks to carry a program's protocol.
func protocolOf(p string) sidecar.Protocol {
	switch p {
	case ProtoHTTP:
		return sidecar.HTTP1
	case ProtoH2C, ProtoGRPC:
		return sidecar.HTTP2
	}
	return sidecar.TCP
}

// sidecarMesh is the programs' proxies, and the telemetry programs that
// read them.
type sidecarMesh struct {
	kind   sidecar.Kind
	bin    string
	ca     *pki.CA // nil without deploy.mtls
	prefix string  // what every workload's SPIFFE ID begins with
	tel    *telemetry.Telemetry
	// metrics says whether the proxies serve their stats (deploy.metrics).
	metrics bool
	// done ends the thread that forked the telemetry programs, once they
	// have stopped (spawn).
	done chan struct{}
	// held are the ports laid out for proxies that have not bound them
	// yet, held by svclab's listeners (reserve).
	heldMu sync.Mutex
	held   map[int]net.Listener

	// mu guards replicas and the proxies' configurations, which
	// endpoint updates change.
	mu sync.Mutex
	// replicas are the proxies of each replica, by the replica's
	// address (one of deployment.replicas).
	replicas map[string]*replicaMesh
	// leadsTo maps each listener's name to the component it leads to
	// (its own for in_ and ingress_, the callee for out_), for the
	// labels of its series.
	leadsTo map[string]string
}

// replicaMesh is the proxies of one replica of a program.
type replicaMesh struct {
	component string
	// inbound is where callers' proxies reach it; ingress where the
	// load reaches it (the entry's replicas alone).
	inbound, ingress string
	// peers are the outbound listeners through which it calls each
	// callee.
	peers   map[string]string
	configs []sidecar.Config
	procs   []*process
}

// layOutSidecars makes the proxies of every replica, with their ports;
// the replicas' programs call out through them (peersOf). With sidecars
// the callers' proxies balance over a component's replicas, so only the
// entry keeps the front bindAddresses put before them, for the load, over
// its replicas' ingress listeners.
func (d *deployment) layOutSidecars(s *spec.Spec) error {
	k, err := sidecar.Lookup(s.Deploy.Sidecar)
	if err != nil {
		return err
	}
	m := &sidecarMesh{kind: k, replicas: map[string]*replicaMesh{}, leadsTo: map[string]string{}, metrics: d.topo.Mesh.Metrics, done: make(chan struct{}), held: map[int]net.Listener{}}
	if m.bin, err = k.Binary(); err != nil {
		return err
	}
	if d.dir, err = tempdir.MkdirTemp(d.id + "-"); err != nil {
		return fmt.Errorf("deployment %s: temp dir: %w", d.id, err)
	}
	m.prefix = strings.TrimSuffix(pki.ID(d.id, "x").String(), "x")
	if s.Deploy.MTLS {
		if m.ca, err = pki.NewCA(d.id); err != nil {
			return err
		}
	}
	d.mesh = m
	names := d.cfg.Names()
	for _, name := range names {
		for _, addr := range d.replicas[name] {
			if m.replicas[addr], err = d.portsOf(name); err != nil {
				return err
			}
		}
	}
	for _, name := range names {
		for i, addr := range d.replicas[name] {
			if err := d.layOutReplica(name, i, m.replicas[addr], func(dep string) []string { return d.replicas[dep] }); err != nil {
				return err
			}
		}
		if f := d.fronts[name]; f != nil && name != d.cfg.EntryName {
			if err := f.Close(); err != nil {
				return fmt.Errorf("component %s: %w", name, err)
			}
			delete(d.fronts, name)
			delete(d.addrs, name)
		}
	}
	entry := d.cfg.EntryName
	if f := d.fronts[entry]; f != nil {
		f.Update(m.ingresses(d.replicas[entry]))
	} else {
		d.addrs[entry] = m.replicas[d.replicas[entry][0]].ingress
	}
	return nil
}

// portsOf picks the ports of the inbound listeners of a new replica of
// component name.
func (d *deployment) portsOf(name string) (*replicaMesh, error) {
	rm := &replicaMesh{component: name, peers: map[string]string{}}
	var err error
	if rm.inbound, err = d.mesh.reserve(); err != nil {
		return nil, err
	}
	if name == d.cfg.EntryName {
		if rm.ingress, err = d.mesh.reserve(); err != nil {
			return nil, err
		}
	}
	return rm, nil
}

// layOutReplica lays out the proxies of replica i of component name,
// whose inbound ports rm holds: its outbound listeners lead to the
// inbound listeners of the replicas of each callee that upstreams gives.
func (d *deployment) layOutReplica(name string, i int, rm *replicaMesh, upstreams func(dep string) []string) error {
	m := d.mesh
	byProto := map[sidecar.Protocol][]sidecar.Listener{}
	in, err := m.tls(d.dir, name, m.prefix, true)
	if err != nil {
		return err
	}
	proto := protocolOf(d.cfg.Programs[name].Protocol)
	own := []sidecar.Listener{{
		Name: "in_" + name, Port: portOf(rm.inbound), Upstreams: []string{d.replicas[name][i]},
		Inbound: true, Component: name, TLS: in,
	}}
	if rm.ingress != "" {
		// Plaintext: the load is no workload of the run.
		own = append(own, sidecar.Listener{
			Name: "ingress_" + name, Port: portOf(rm.ingress), Upstreams: []string{d.replicas[name][i]},
			Inbound: true, Component: name,
		})
	}
	byProto[proto] = own
	for _, dep := range d.cfg.Programs[name].Deps() {
		out, err := m.reserve()
		if err != nil {
			return err
		}
		t, err := m.tls(d.dir, name, pki.ID(d.id, dep).String(), false)
		if err != nil {
			return err
		}
		ups, err := d.inboundsOf(dep, upstreams(dep))
		if err != nil {
			return err
		}
		dp := protocolOf(d.cfg.Programs[dep].Protocol)
		byProto[dp] = append(byProto[dp], sidecar.Listener{
			Name: "out_" + name + "_" + dep, Port: portOf(out), Upstreams: ups,
			Component: dep, TLS: t,
		})
		rm.peers[dep] = out
	}
	for _, proto := range slices.Sorted(maps.Keys(byProto)) {
		cname := d.replicaName(name, i) + "." + m.kind.Name()
		if len(byProto) > 1 {
			cname += "-" + strings.ReplaceAll(string(proto), "/", "")
		}
		dir := filepath.Join(d.dir, cname)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fmt.Errorf("sidecar %s: %w", cname, err)
		}
		c := sidecar.Config{Name: cname, Protocol: proto, Listeners: byProto[proto], Dir: dir, Threads: 1}
		if m.metrics {
			a, err := m.reserve()
			if err != nil {
				return err
			}
			c.Admin = portOf(a)
		}
		for _, l := range c.Listeners {
			m.leadsTo[l.Name] = l.Component
		}
		rm.configs = append(rm.configs, c)
	}
	return nil
}

// tls is the mutual TLS of a listener of component name's proxy that
// demands peer (a prefix of every workload's ID on an inbound listener),
// nil without deploy.mtls.
func (m *sidecarMesh) tls(dir, name, peer string, isPrefix bool) (*sidecar.TLS, error) {
	if m.ca == nil {
		return nil, nil
	}
	f, err := m.ca.Write(dir, name)
	if err != nil {
		return nil, err
	}
	return sidecar.NewTLS(dir, f.CA, f.Cert, f.Key, peer, isPrefix)
}

// inboundsOf is where callers' proxies reach the replicas of component
// dep at addrs: their inbound listeners, or the fault proxies before them.
func (d *deployment) inboundsOf(dep string, addrs []string) ([]string, error) {
	out := []string{}
	for _, a := range addrs {
		rm := d.mesh.replicas[a]
		if rm == nil {
			continue
		}
		up, err := d.hop(dep, rm.inbound)
		if err != nil {
			return nil, err
		}
		out = append(out, up)
	}
	return out, nil
}

// ingresses are the ingress listeners of the replicas at addrs.
func (m *sidecarMesh) ingresses(addrs []string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, a := range addrs {
		if rm := m.replicas[a]; rm != nil && rm.ingress != "" {
			out = append(out, rm.ingress)
		}
	}
	return out
}

// peersOf is where replica i of component name reaches each component it
// calls: its own proxy's outbound listeners, or without sidecars the
// callees' own addresses (or their fronts, or fault proxies).
func (d *deployment) peersOf(name string, i int) map[string]string {
	if d.mesh == nil {
		return d.peers[name]
	}
	d.mesh.mu.Lock()
	defer d.mesh.mu.Unlock()
	out := maps.Clone(d.peers[name])
	maps.Copy(out, d.mesh.replicas[d.replicas[name][i]].peers)
	return out
}

// inboundOf is the inbound listener of replica i of component name's
// proxy, "" without sidecars.
func (d *deployment) inboundOf(name string, i int) string {
	if d.mesh == nil {
		return ""
	}
	d.mesh.mu.Lock()
	defer d.mesh.mu.Unlock()
	return d.mesh.replicas[d.replicas[name][i]].inbound
}

// startSidecars starts the telemetry programs, then every replica's
// proxies, and waits until each listens and, with deploy.metrics, until
// Prometheus has scraped each.
func (d *deployment) startSidecars(ctx context.Context, _ *procstat.Reader, opts deploy.Options) error {
	m := d.mesh
	ratio, metrics := d.topo.Mesh.Tracing, d.topo.Mesh.Metrics
	if ratio > 0 || metrics {
		var err error
		m.tel, err = telemetry.Start(ctx, telemetry.Config{
			ID: d.id, Dir: d.dir, Tracing: ratio, JaegerPath: deploy.JaegerPath(),
			CPUs: opts.TelemetryCPUs, DeploymentCPUs: opts.CPUs, Proc: d.reader, Spawn: m.spawn,
			Series: "the proxies' envoy_cluster_upstream_rq_total, envoy_http_downstream_rq_time_bucket, ... by group and component",
		})
		if err != nil {
			return err
		}
	}
	for _, name := range d.cfg.Names() {
		for _, addr := range d.replicas[name] {
			if err := d.startProxies(ctx, m.replicas[addr]); err != nil {
				return err
			}
		}
	}
	if metrics {
		if err := m.tel.StartMetrics(ctx, m.targets()); err != nil {
			return err
		}
		return m.tel.AwaitScraping(ctx)
	}
	return nil
}

// startProxies starts the proxies of one replica, and waits until each
// listens.
func (d *deployment) startProxies(ctx context.Context, rm *replicaMesh) error {
	m := d.mesh
	var started []*process
	for i := range rm.configs {
		c := &rm.configs[i]
		m.tel.TraceApp(m.kind, c, rm.component)
		path, err := sidecar.Write(m.kind, *c)
		if err != nil {
			return err
		}
		l := launch{name: c.Name, argv: append([]string{m.bin}, m.kind.Args(path, *c)...), dir: c.Dir, log: d.opts.Log,
			env: append(os.Environ(), OwnerEnv+"="+ownerMark())}
		m.unhold(*c)
		p, err := start(l, func(pid int) deploy.ResourceSource { return d.reader.Process(pid) })
		if err != nil {
			return fmt.Errorf("sidecar %s: %w", c.Name, err)
		}
		p.info.Role, p.info.Group, p.info.Components = deploy.RoleSidecar, rm.component, []string{rm.component}
		p.component = rm.component
		if c.Protocol == protocolOf(d.cfg.Programs[rm.component].Protocol) {
			// Its inbound listener: where callers' proxies reach the replica.
			p.listen[rm.component] = runtime.Endpoint{Transport: d.cfg.Programs[rm.component].Protocol, Network: "tcp", Addr: rm.inbound}
		}
		d.mu.Lock()
		d.procs = append(d.procs, p)
		d.mu.Unlock()
		m.mu.Lock()
		rm.procs = append(rm.procs, p)
		m.mu.Unlock()
		started = append(started, p)
	}
	for i, p := range started {
		for _, l := range rm.configs[i].Listeners {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port))
			if err := d.waitListening(ctx, p, addr); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitListening waits for proxy p to accept on addr.
func (d *deployment) waitListening(ctx context.Context, p *process, addr string) error {
	timeout := d.opts.ReadyTimeout
	if timeout <= 0 {
		timeout = d.topo.StartTimeout
	}
	if timeout <= 0 {
		timeout = spec.DefaultStartTimeout
	}
	pr := probe.Probe{Addr: addr, Check: probe.TCP}
	err := p.await(ctx, pr, timeout)
	switch {
	case p.exited():
		return fmt.Errorf("sidecar %s exited before it listened: %w", p.info.Name, p.Exit())
	case err != nil:
		return fmt.Errorf("sidecar %s: %s: %w; last output:\n%s", p.info.Name, pr, err, deploy.IndentTail(p.Tail()))
	}
	return nil
}

// addReplicaProxies lays out and starts the proxies of replica i of
// component name, added by a scale, before its program starts: their
// outbound listeners lead to the callees' live replicas.
func (d *deployment) addReplicaProxies(ctx context.Context, name string, i int) error {
	m := d.mesh
	if m == nil {
		return nil
	}
	rm, err := d.portsOf(name)
	if err != nil {
		return err
	}
	live := func(dep string) []string {
		var out []string
		for _, p := range d.live(dep) {
			out = append(out, p.addr)
		}
		return out
	}
	m.mu.Lock()
	err = d.layOutReplica(name, i, rm, live)
	m.replicas[d.replicas[name][i]] = rm
	m.mu.Unlock()
	if err != nil {
		return err
	}
	if err := d.startProxies(ctx, rm); err != nil {
		return err
	}
	return m.tel.SetTargets(m.targets())
}

// watchProxies reports the exit of the proxies of the replica at addr,
// as of any process of the deployment.
func (d *deployment) watchProxies(addr string) {
	if d.mesh == nil {
		return
	}
	d.mesh.mu.Lock()
	procs := slices.Clone(d.mesh.replicas[addr].procs)
	d.mesh.mu.Unlock()
	for _, p := range procs {
		go d.watch(p)
	}
}

// setUpstreams points every proxy's way to component name at the
// replicas at addrs, and tells the running proxies.
func (d *deployment) setUpstreams(name string, addrs []string) error {
	m := d.mesh
	m.mu.Lock()
	defer m.mu.Unlock()
	ups, err := d.inboundsOf(name, addrs)
	if err != nil {
		return err
	}
	var errs []error
	for _, rm := range m.replicas {
		for i := range rm.configs {
			errs = append(errs, sidecar.SetUpstreams(m.kind, &rm.configs[i], name, ups))
		}
	}
	return errors.Join(errs...)
}

// retireProxies stops the proxies of the replica at addr, which was
// scaled away or killed (its callers' proxies no longer send to it),
// once Prometheus has scraped them since it ended, so that the calls
// they carried are counted; their exit is no failure.
func (d *deployment) retireProxies(ctx context.Context, addr string) error {
	m := d.mesh
	if m == nil {
		return nil
	}
	m.mu.Lock()
	rm := m.replicas[addr]
	m.mu.Unlock()
	if rm == nil {
		return nil
	}
	for _, p := range rm.procs {
		p.retired.Store(true)
	}
	m.tel.AwaitScrape(ctx, time.Now(), func() []string { return rm.admins() })
	m.mu.Lock()
	delete(m.replicas, addr)
	m.mu.Unlock()
	d.mu.Lock()
	d.procs = slices.DeleteFunc(d.procs, func(q *process) bool { return slices.Contains(rm.procs, q) })
	d.mu.Unlock()
	errs := []error{m.tel.SetTargets(m.targets())}
	for _, c := range rm.configs {
		m.unhold(c) // a proxy that did not start
	}
	for _, p := range rm.procs {
		errs = append(errs, p.stop(ctx, stopGrace))
	}
	for _, c := range rm.configs {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// admins are the admin listeners of the replica's proxies.
func (rm *replicaMesh) admins() []string {
	var out []string
	for _, c := range rm.configs {
		if c.Admin != 0 {
			out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Admin)))
		}
	}
	return out
}

// targets are the admin listeners of every proxy, for Prometheus.
func (m *sidecarMesh) targets() []telemetry.Target {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []telemetry.Target
	for _, addr := range slices.Sorted(maps.Keys(m.replicas)) {
		rm := m.replicas[addr]
		for _, c := range rm.configs {
			if c.Admin == 0 {
				continue
			}
			out = append(out, telemetry.Target{
				Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Admin)), Process: c.Name,
				Path: telemetry.EnvoyStatsPath, Params: telemetry.EnvoyStats,
				Labels: map[string]string{"group": rm.component},
			})
		}
	}
	return out
}

// spawn runs start, which starts a telemetry program, on a thread of
// its own that lives until the program has stopped: the program's
// parent-death signal comes when the thread that forked it ends, and Go
// ends a thread whose goroutine exits locked to it (as the goroutine that
// waits for each program and proxy does, internal/deploy/child).
func (m *sidecarMesh) spawn(start func()) {
	started := make(chan struct{})
	go func() {
		goruntime.LockOSThread()
		start()
		close(started)
		<-m.done
	}()
	<-started
}

// beforeStop lets the telemetry catch up with the last calls before the
// proxies stop: their histograms' last flush, then the telemetry's own
// wait (telemetry.BeforeStop).
func (m *sidecarMesh) beforeStop(ctx context.Context) {
	if m == nil || m.tel == nil {
		return
	}
	if m.tel.Metrics() {
		select {
		case <-time.After(2 * sidecar.EnvoyStatsFlushInterval):
		case <-ctx.Done():
		}
	}
	m.tel.BeforeStop(ctx)
}

// stop reads what the telemetry programs received, once every proxy has
// stopped, and stops them.
func (m *sidecarMesh) stop(ctx context.Context) error {
	if m == nil {
		return nil
	}
	defer close(m.done)
	m.heldMu.Lock()
	for port, l := range m.held {
		_ = l.Close()
		delete(m.held, port)
	}
	m.heldMu.Unlock()
	return m.tel.Stop(ctx, nil)
}

// Spans are the proxies' spans, which stand for the programs' (a
// deploy.TraceSource), once the deployment has stopped.
func (m *sidecarMesh) Spans() ([]deploy.Span, error) { return m.tel.Spans() }

// Series are the samples of the proxies' stats (a deploy.MetricSource),
// once the deployment has stopped. Each Envoy series carries, beside the
// group (the program the proxy sits beside), the component its listener
// or cluster leads to, so that a caller's outbound series are the hop
// group→component, and the code class of a response count (code "5xx").
func (m *sidecarMesh) Series() ([]deploy.Sample, error) {
	samples, err := m.tel.Series()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range samples {
		for _, key := range []string{"envoy_http_conn_manager_prefix", "envoy_tcp_prefix", "envoy_cluster_name"} {
			if c, ok := m.leadsTo[strings.TrimPrefix(s.Labels[key], "to_")]; ok {
				s.Labels["component"] = c
			}
		}
		if class := s.Labels["envoy_response_code_class"]; class != "" {
			s.Labels["code"] = class + "xx"
		}
	}
	return samples, nil
}

// TelemetryProcesses are the telemetry programs (a deploy.TelemetrySource).
func (m *sidecarMesh) TelemetryProcesses() []deploy.TelemetryProcess { return m.tel.Processes() }

// MeshLines say where the mesh can be seen, for `svclab up` (a
// deploy.MeshDescriber).
func (m *sidecarMesh) MeshLines() []string {
	out := []string{"proxies: the entry above is its proxy's ingress listener; each program calls out through its own proxy"}
	if m.ca != nil {
		out = append(out, "mtls:    between the proxies (each program is plaintext to its own proxy on loopback, and the load to the entry's ingress listener)")
	}
	return append(out, m.tel.Lines()...)
}

// meshCapabilities are what the sidecars add to the deployment's
// capabilities: their telemetry.
func (d *deployment) meshCapabilities() deploy.Capabilities {
	m := d.mesh
	if m == nil {
		return deploy.Capabilities{}
	}
	c := deploy.Capabilities{Mesh: m}
	if m.tel != nil {
		c.Telemetry = m
	}
	if m.tel.Tracing() {
		c.Traces = m
	}
	if m.tel.Metrics() {
		c.Metrics = m
	}
	return c
}

// logf writes a line of the deployment's to its log, if it has one.
func (d *deployment) logf(format string, args ...any) {
	if d.opts.Log != nil {
		fmt.Fprintf(d.opts.Log, "[svclab] deployment %s: "+format+"\n", append([]any{d.id}, args...)...)
	}
}

// reserve picks a free loopback port for a proxy and holds it, as
// host:port, until the proxy is about to bind it (unhold), so that nothing
// takes it in between: not another program, nor the telemetry programs,
// which pick their ports after the proxies' are laid out.
func (m *sidecarMesh) reserve() (string, error) {
	l, err := ports.Listen()
	if err != nil {
		return "", fmt.Errorf("pick a port for a sidecar: %w", err)
	}
	addr := l.Addr().String()
	m.heldMu.Lock()
	m.held[portOf(addr)] = l
	m.heldMu.Unlock()
	return addr, nil
}

// unhold frees the ports of c's listeners and admin API, for its proxy
// to bind.
func (m *sidecarMesh) unhold(c sidecar.Config) {
	m.heldMu.Lock()
	defer m.heldMu.Unlock()
	taken := []int{c.Admin}
	for _, l := range c.Listeners {
		taken = append(taken, l.Port)
	}
	for _, p := range taken {
		if l, ok := m.held[p]; ok {
			_ = l.Close()
			delete(m.held, p)
		}
	}
}

func portOf(hostport string) int {
	_, p, _ := net.SplitHostPort(hostport)
	n, _ := strconv.Atoi(p)
	return n
}
