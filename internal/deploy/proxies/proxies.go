// Package proxies runs a deployment's mesh proxies, the process side of
// deploy.sidecar: it lays out the sidecars and node proxies of a topology
// (internal/deploy/sidecar's Layout), holds the ports they will listen on
// until each proxy starts, builds each proxy's command, picks the control
// group it joins, and keeps the layout true as replicas are added, scaled
// away or die: a replica's sidecar is laid out and started beside it, and
// every proxy's upstreams follow the live replicas (SetUpstreams).
//
// It does not make processes: the deployer does, through Config.Launch, so
// that a proxy is a process of the deployment like its hosts (the same
// spawning thread, output tail, exit watch and stop). P is the deployer's
// process type.
package proxies

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Launch is one proxy for the deployer to start as a process of its own:
// in its own process group with the parent-death signal DeathSignal,
// moved into Cgroup (when set) as soon as it exists.
type Launch struct {
	Cmd         *exec.Cmd
	DeathSignal syscall.Signal
	Info        deploy.ProcessInfo
	// Replica is the ordinal of the replica a sidecar sits beside (0 for
	// a node proxy).
	Replica int
	// Listen are its inbound listeners, which its health checks probe.
	Listen map[string]runtime.Endpoint
	Cgroup *cgroup.Group
	// OwnCgroup says the proxy's process owns Cgroup and removes it when
	// it is gone.
	OwnCgroup bool
	// Forks says the program forks its workers (nginx): it is sampled
	// with its children.
	Forks bool
}

// Config is what the proxies of one deployment need of it.
type Config[P any] struct {
	ID       string // the deployment's, in every proxy's environment and cgroup name
	Dir      string // the deployment's private directory; each proxy gets one inside
	Topology *runtime.Topology
	Env      []string // added to each proxy's environment
	CPUs     string   // the deployment's CPU list, a node proxy's cgroup
	// Credentials are component's mTLS files; nil without deploy.mtls.
	Credentials func(component string) pki.Files
	// Trace points a proxy's configuration at the deployment's tracing,
	// if it has any.
	Trace func(sidecar.Kind, *sidecar.Config)
	// Live lists the ordinals of group g's replicas that take calls.
	Live func(g int) []int
	// HostCgroup is the cgroup of replica r of group g's host, nil if it
	// has none (or is not among the deployment's processes yet).
	HostCgroup func(g, r int) *cgroup.Group
	// Launch starts a proxy; the deployer's process.
	Launch func(Launch) (P, error)
	// Logf reports what goes wrong and fails nothing.
	Logf func(format string, args ...any)
}

// Proxies are a deployment's sidecar and node proxies. The ports they will
// listen on stay bound by svclab until each proxy is about to start, so no
// one else takes them in between. Once the deployment runs, mu guards the
// layout, which replicas added, scaled away or dead change. A nil
// *Proxies is a deployment without proxies: its methods do nothing.
type Proxies[P any] struct {
	cfg    Config[P]
	layout *sidecar.Layout
	bin    string
	mu     sync.Mutex
	held   map[int]net.Listener // port → svclab's listener on it
	// procs are the proxies' processes, by the group and replica they sit
	// beside ({-1, 0} for a node proxy).
	procs map[[2]int]P
}

// New lays out the proxies of cfg.Topology, if it has any (nil if not):
// appAddr gives the listeners of component c on group g's first replicas,
// in ordinal order. The hosts' peers follow from it (Route).
func New[P any](cfg Config[P], appAddr func(g int, c string) []string) (*Proxies[P], error) {
	p := cfg.Topology
	if p.Sidecar == "" || p.Sidecar == spec.SidecarNone {
		return nil, nil
	}
	m := &Proxies[P]{cfg: cfg, held: map[int]net.Listener{}, procs: map[[2]int]P{}}
	layout, err := sidecar.NewLayout(p, appAddr, m.reserve, m.dir)
	if err != nil {
		m.Release()
		return nil, err
	}
	m.layout = layout
	if m.bin, err = layout.Kind.Binary(); err != nil {
		m.Release()
		return nil, err
	}
	if cfg.Credentials != nil {
		creds := func(c string) (string, string, string) {
			f := cfg.Credentials(c)
			return f.CA, f.Cert, f.Key
		}
		prefix := strings.TrimSuffix(pki.ID(cfg.ID, "x").String(), "x")
		if err := layout.Secure(p, creds, prefix, func(c string) string { return pki.ID(cfg.ID, c).String() }); err != nil {
			m.Release()
			return nil, err
		}
	}
	for i := range layout.Proxies {
		cfg.Trace(layout.Kind, &layout.Proxies[i].Config)
	}
	return m, nil
}

// Entry is the entry component's inbound listener on its first replica's
// proxy, where clients call it.
func (m *Proxies[P]) Entry() string {
	return m.layout.Inbound[m.cfg.Topology.Entry][0]
}

// Release frees every port still held.
func (m *Proxies[P]) Release() {
	if m == nil {
		return
	}
	for p, l := range m.held {
		_ = l.Close()
		delete(m.held, p)
	}
}

// reserve binds a free loopback port for a proxy's listener.
func (m *Proxies[P]) reserve() (int, error) {
	l, err := ports.Listen()
	if err != nil {
		return 0, fmt.Errorf("reserve a port for a sidecar: %w", err)
	}
	n := l.Addr().(*net.TCPAddr).Port
	m.held[n] = l
	return n, nil
}

// unhold frees the ports of c's listeners, just before its proxy binds
// them (or when it will not).
func (m *Proxies[P]) unhold(c sidecar.Config) {
	for _, l := range c.Listeners {
		if h, ok := m.held[l.Port]; ok {
			_ = h.Close()
			delete(m.held, l.Port)
		}
	}
}

// dir makes the private directory of proxy name.
func (m *Proxies[P]) dir(name string) (string, error) {
	dir := filepath.Join(m.cfg.Dir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("sidecar %s: %w", name, err)
	}
	return dir, nil
}

// Route makes the host of replica r of group g call its peers through its
// own sidecar's outbound listeners.
func (m *Proxies[P]) Route(hc *hostv1.HostConfig, g, r int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for dep, addr := range m.layout.Peers[g][r] {
		hc.Peers[dep] = &hostv1.EndpointSet{Endpoints: []*hostv1.Endpoint{{Transport: m.cfg.Topology.Transport, Network: "tcp", Addr: addr}}}
	}
}

// StartAll writes each laid-out proxy's configuration into its private
// directory and starts it, and then frees the ports still held. Each is a
// process of the deployment, health checked through its inbound listeners
// like a host. It returns the proxies started, also on error.
func (m *Proxies[P]) StartAll() ([]P, error) {
	if m == nil {
		return nil, nil
	}
	defer m.Release()
	var out []P
	for _, px := range m.layout.Proxies {
		proc, err := m.start(px, m.cgroup)
		if err != nil {
			return out, err
		}
		out = append(out, proc)
	}
	return out, nil
}

// start writes px's configuration and starts it, in the cgroup that cg
// gives it.
func (m *Proxies[P]) start(px sidecar.Proxy, cg func(sidecar.Proxy) (*cgroup.Group, bool, error)) (P, error) {
	var zero P
	k := m.layout.Kind
	c := px.Config
	path, err := sidecar.Write(k, c)
	if err != nil {
		return zero, err
	}
	topo := m.cfg.Topology
	l := Launch{
		Info:        deploy.ProcessInfo{Name: c.Name, Role: deploy.RoleNodeProxy},
		DeathSignal: sidecar.DeathSignal(k),
		Replica:     px.Replica,
		Listen:      map[string]runtime.Endpoint{},
		Forks:       sidecar.Forks(k),
	}
	if px.Group >= 0 {
		g := topo.Groups[px.Group]
		l.Info.Group, l.Info.Role, l.Info.Components = g.Name, deploy.RoleSidecar, g.Components
	}
	for _, lis := range c.Listeners {
		if lis.Inbound {
			l.Listen[lis.Component] = runtime.Endpoint{Transport: topo.Transport, Network: "tcp", Addr: fmt.Sprintf("127.0.0.1:%d", lis.Port)}
		}
	}
	m.unhold(c)
	l.Cmd = exec.Command(m.bin, k.Args(path, c)...)
	l.Cmd.Dir = c.Dir
	l.Cmd.Env = append(os.Environ(), m.cfg.Env...)
	l.Cmd.Env = append(l.Cmd.Env, runtime.DeploymentEnv+"="+m.cfg.ID)
	if l.Cgroup, l.OwnCgroup, err = cg(px); err != nil {
		return zero, fmt.Errorf("sidecar %s: %w", c.Name, err)
	}
	proc, err := m.cfg.Launch(l)
	if err != nil {
		return zero, fmt.Errorf("sidecar %s: %w", c.Name, err)
	}
	m.procs[[2]int{px.Group, px.Replica}] = proc
	return proc, nil
}

// cgroup is the control group a proxy joins, if any, and whether the
// proxy owns it (and removes it when it is gone).
//
// A sidecar joins the group of the host replica it sits beside: with `[deploy.resources]` the two
// share the component's CPU quota and memory limit, as Istio counts the
// sidecar in the pod's limits, so that a component's mesh costs it from
// its own budget; under `experiment.isolation` the group also pins the
// sidecar to the system under test's CPUs. A node proxy serves every
// component and belongs to none: it gets a group of its own with the
// system under test's CPUs and no limit, as a node's ztunnel runs outside
// any pod's.
func (m *Proxies[P]) cgroup(px sidecar.Proxy) (*cgroup.Group, bool, error) {
	if px.Group >= 0 {
		return m.cfg.HostCgroup(px.Group, px.Replica), false, nil
	}
	if m.cfg.CPUs == "" {
		return nil, false, nil
	}
	mgr, err := cgroup.Open()
	if err != nil {
		return nil, false, fmt.Errorf("node proxy %s needs a cgroup (cpus %q): %w", px.Config.Name, m.cfg.CPUs, err)
	}
	g, err := mgr.New(m.cfg.ID+"-"+px.Config.Name, cgroup.Limits{CPUs: m.cfg.CPUs})
	if err != nil {
		return nil, false, err
	}
	return g, true, nil
}

// Entries are the inbound listeners of the entry's live replicas'
// proxies, where a client reaches them (nil without proxies or with the
// inproc transport).
func (m *Proxies[P]) Entries(opts transport.DialOptions) []balancer.Address {
	if m == nil || m.cfg.Topology.InProcess() {
		return nil
	}
	topo := m.cfg.Topology
	eg := topo.EntryGroup()
	live := m.cfg.Live(eg)
	out := []balancer.Address{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range live {
		addr := m.layout.InboundOf(eg, r, topo.Entry)
		if addr == "" {
			continue
		}
		ep := runtime.Endpoint{Transport: topo.Transport, Network: "tcp", Addr: addr}
		out = append(out, balancer.Address{
			Addr: ep.String(),
			Dial: func(ctx context.Context) (transport.Conn, error) {
				return deploy.DialEndpoint(ctx, ep, opts)
			},
		})
	}
	return out
}

// Scalable says why the proxies cannot follow a change of group's
// replicas, or nil when they can (or there are none).
func (m *Proxies[P]) Scalable(group string) error {
	if m == nil {
		return nil
	}
	if err := m.layout.Scalable(); err != nil {
		return fmt.Errorf("scale group %s: %w", group, err)
	}
	return nil
}
