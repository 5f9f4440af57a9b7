package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// sidecarLayout is a deployment's sidecar proxies: the ports they will
// listen on stay bound by svclab until each proxy is about to start, so no
// one else takes them in between. Once the deployment runs, mu guards the
// layout, which replicas added, scaled away or dead change (sidecarscale.go).
type sidecarLayout struct {
	*sidecar.Layout
	bin  string
	mu   sync.Mutex
	held map[int]net.Listener // port → svclab's listener on it
	// procs are the proxies' processes, by the group and replica they sit
	// beside ({-1, 0} for a node proxy).
	procs map[[2]int]*process
}

func (m *sidecarLayout) release() {
	for p, l := range m.held {
		_ = l.Close()
		delete(m.held, p)
	}
}

// reserve binds a free loopback port for a proxy's listener.
func (m *sidecarLayout) reserve() (int, error) {
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
func (m *sidecarLayout) unhold(c sidecar.Config) {
	for _, l := range c.Listeners {
		if h, ok := m.held[l.Port]; ok {
			_ = h.Close()
			delete(m.held, l.Port)
		}
	}
}

// layOutSidecars lays out the sidecars of the topology, if it has any, and
// points the entry at the entry component's inbound listener. The hosts'
// peers follow from it in hostConfig (routeThroughSidecars).
func (d *Deployment) layOutSidecars(all []*sockets) error {
	p := d.topo
	if p.Sidecar == "" || p.Sidecar == spec.SidecarNone {
		return nil
	}
	m := &sidecarLayout{held: map[int]net.Listener{}, procs: map[[2]int]*process{}}
	appAddr := func(g int, c string) []string {
		var ss []*sockets
		for _, s := range all {
			if s.group == g {
				ss = append(ss, s)
			}
		}
		slices.SortFunc(ss, func(a, b *sockets) int { return a.ordinal - b.ordinal })
		var out []string
		for _, s := range ss {
			out = append(out, s.listen[c].GetEndpoint().GetAddr())
		}
		return out
	}
	layout, err := sidecar.NewLayout(p, appAddr, m.reserve, d.sidecarDir)
	if err != nil {
		m.release()
		return err
	}
	m.Layout = layout
	if m.bin, err = layout.Kind.Binary(); err != nil {
		m.release()
		return err
	}
	if d.mesh != nil && d.mesh.mtls {
		creds := func(c string) (string, string, string) {
			f := d.mesh.certs[c]
			return f.CA, f.Cert, f.Key
		}
		prefix := strings.TrimSuffix(pki.ID(d.id, "x").String(), "x")
		if err := layout.Secure(p, creds, prefix, func(c string) string { return pki.ID(d.id, c).String() }); err != nil {
			m.release()
			return err
		}
	}
	for i := range layout.Proxies {
		d.mesh.telemetry().TraceProxy(layout.Kind, &layout.Proxies[i].Config)
	}
	d.sidecars = m
	if !p.InProcess() {
		d.entry = runtime.Endpoint{Transport: p.Transport, Network: "tcp", Addr: layout.Inbound[p.Entry][0]}
	}
	return nil
}

// sidecarDir makes the private directory of proxy name.
func (d *Deployment) sidecarDir(name string) (string, error) {
	dir := filepath.Join(d.dir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("sidecar %s: %w", name, err)
	}
	return dir, nil
}

// routeThroughSidecars makes the host of replica s call its peers through
// its own sidecar's outbound listeners.
func (d *Deployment) routeThroughSidecars(s *sockets, hc *hostv1.HostConfig) {
	if d.sidecars == nil {
		return
	}
	d.sidecars.mu.Lock()
	defer d.sidecars.mu.Unlock()
	for dep, addr := range d.sidecars.Peers[s.group][s.ordinal] {
		hc.Peers[dep] = &hostv1.EndpointSet{Endpoints: []*hostv1.Endpoint{{Transport: d.topo.Transport, Network: "tcp", Addr: addr}}}
	}
}

// startSidecars writes each proxy's configuration into its private
// directory and starts it. Each is a process of the deployment, health
// checked through its inbound listeners like a host.
func (d *Deployment) startSidecars(opts Options) error {
	if d.sidecars == nil {
		return nil
	}
	defer d.sidecars.release()
	for _, px := range d.sidecars.Proxies {
		proc, err := d.startProxy(px, nil, opts)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.processes = append(d.processes, proc)
		d.mu.Unlock()
	}
	return nil
}

// startProxy writes px's configuration and starts it, in the cgroup of
// host when that is given (a replica started later, not yet among the
// processes proxyCgroup looks through).
func (d *Deployment) startProxy(px sidecar.Proxy, host *process, opts Options) (*process, error) {
	k := d.sidecars.Kind
	c := px.Config
	path, err := sidecar.Write(k, c)
	if err != nil {
		return nil, err
	}
	info := deploy.ProcessInfo{Name: c.Name, Role: deploy.RoleNodeProxy}
	if px.Group >= 0 {
		g := d.topo.Groups[px.Group]
		info.Group, info.Role, info.Components = g.Name, deploy.RoleSidecar, g.Components
	}
	listen := map[string]runtime.Endpoint{}
	for _, l := range c.Listeners {
		if l.Inbound {
			listen[l.Component] = runtime.Endpoint{Transport: d.topo.Transport, Network: "tcp", Addr: fmt.Sprintf("127.0.0.1:%d", l.Port)}
		}
	}
	d.sidecars.unhold(c)
	cmd := exec.Command(d.sidecars.bin, k.Args(path, c)...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Env = append(cmd.Env, runtime.DeploymentEnv+"="+d.id)
	cg, own, err := d.proxyCgroup(px)
	if host != nil {
		cg, own, err = host.cg, false, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sidecar %s: %w", c.Name, err)
	}
	proc, err := d.launchProxy(cmd, sidecar.DeathSignal(k), info, listen, opts, cg, own)
	if err != nil {
		return nil, fmt.Errorf("sidecar %s: %w", c.Name, err)
	}
	proc.ordinal = px.Replica
	d.sampleTree(proc, sidecar.Forks(k))
	d.sidecars.procs[[2]int{px.Group, px.Replica}] = proc
	return proc, nil
}

// plaintextBehindSidecar reports whether p is a host whose listeners
// serve only its own sidecar, in plaintext on loopback, while the sidecars
// carry mTLS.
func (d *Deployment) plaintextBehindSidecar(p *process) bool {
	return d.sidecars != nil && p.info.Role == deploy.RoleHost
}

// launchProxy starts a proxy program as a child of the deployment, as
// start does a host: its own process group, the parent-death signal
// deathsig (sidecar.DeathSignal), its output recorded, and moved into cg
// when that is set (proxyCgroup; own says the proxy's process removes it).
// It belongs to no group's replicas (group -1), so scaling and endpoint
// pushes never count it.
func (d *Deployment) launchProxy(cmd *exec.Cmd, deathsig syscall.Signal, info deploy.ProcessInfo, listen map[string]runtime.Endpoint, opts Options, cg *cgroup.Group, own bool) (*process, error) {
	dropCgroup := func() {
		if cg != nil && own {
			_ = cg.Remove()
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathsig}
	r, w, err := os.Pipe()
	if err != nil {
		dropCgroup()
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	var startErr error
	d.spawn.do(func() {
		// A proxy program cannot join a group itself, as a host does
		// before it runs anything: it is moved in (all its threads) as
		// soon as it exists, before it has read its configuration.
		if startErr = cmd.Start(); startErr == nil && cg != nil {
			if startErr = cg.Add(cmd.Process.Pid); startErr != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}
	})
	_ = w.Close()
	if startErr != nil {
		_ = r.Close()
		dropCgroup()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, startErr)
	}
	info.PID = cmd.Process.Pid
	if cg != nil {
		lim := cg.Limits()
		info.Limits = &lim
	}
	proc := &process{
		group:    -1,
		info:     info,
		listen:   listen,
		cmd:      cmd,
		tail:     newRing(opts.TailLines),
		readDone: make(chan struct{}),
		done:     make(chan struct{}),
	}
	proc.res = d.proc.Process(proc.info.PID)
	if cg != nil && own {
		proc.cg, proc.res = cg, procstat.CgroupSource{Proc: proc.res, Group: cg}
	}
	go proc.read(r, opts.Log)
	go proc.wait()
	return proc, nil
}

// sidecarEntries are the inbound listeners of the entry's live replicas'
// proxies, where a client reaches them (nil without sidecars).
func (d *Deployment) sidecarEntries(opts transport.DialOptions) []balancer.Address {
	if d.sidecars == nil || d.topo.InProcess() {
		return nil
	}
	eg := d.topo.EntryGroup()
	live := d.live(eg)
	out := []balancer.Address{}
	d.sidecars.mu.Lock()
	defer d.sidecars.mu.Unlock()
	for _, p := range live {
		addr := d.sidecars.InboundOf(eg, p.ordinal, d.topo.Entry)
		if addr == "" {
			continue
		}
		ep := runtime.Endpoint{Transport: d.topo.Transport, Network: "tcp", Addr: addr}
		out = append(out, balancer.Address{
			Addr: ep.String(),
			Dial: func(ctx context.Context) (transport.Conn, error) {
				return deploy.DialEndpoint(ctx, ep, opts)
			},
		})
	}
	return out
}

// sidecarsScale says why a deployment's sidecars cannot follow a change of
// its replicas, or nil when they can (or it has none).
func (d *Deployment) sidecarsScale(group string) error {
	if d.sidecars == nil {
		return nil
	}
	if err := d.sidecars.Scalable(); err != nil {
		return fmt.Errorf("scale group %s: %w", group, err)
	}
	return nil
}
