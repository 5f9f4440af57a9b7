package sidecar

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/renameio/v2"

	"github.com/svclab/svclab/internal/runtime"
)

// Endpoint updates: a mesh's control plane tells the running proxies when
// a callee's replicas change, as Istio's pushes EDS to Envoy, so that no
// proxy restarts when a replica is added, scaled away or dies. A Live kind
// takes them while it runs (Layout.SetUpstreams), from the endpoint sets the
// deployer already keeps for its hosts: Envoy (a Dynamic kind) reads the
// upstreams of its outbound listeners from files it watches; nginx
// reloads gracefully (nginxreload.go); HAProxy moves servers in and out of
// spare slots through its runtime API (haproxyruntime.go).

// Dynamic is a Kind whose running proxies take a new set of upstreams for
// an outbound listener without a restart.
type Dynamic interface {
	Kind
	// WriteUpstreams replaces, atomically, the file from which the proxy
	// configured by c reads the upstreams of its outbound listener l.
	WriteUpstreams(c Config, l Listener) error
}

// Live is a Kind whose running proxy takes new upstreams for its outbound
// listeners without a restart and without failing the calls it carries:
// Envoy through the endpoint files it watches, nginx by a graceful reload,
// HAProxy through its runtime API.
type Live interface {
	Kind
	// Update tells the running proxy configured by c that the upstreams
	// of its outbound listeners changed lead where c says now. It returns
	// once the proxy sends new calls there, or with an error.
	Update(c Config, changed []Listener) error
}

// ErrStatic is returned when the proxies of a kind that is not Live
// would need new upstreams: they keep those they started with.
var ErrStatic = errors.New("the running proxies keep the upstreams they started with")

// Write writes c's configuration into c.Dir, and for a Dynamic kind the
// upstreams of every outbound listener beside it; it returns the path of
// the configuration, which Args take.
func Write(k Kind, c Config) (string, error) {
	text, err := k.Render(c)
	if err != nil {
		return "", fmt.Errorf("sidecar %s: %w", c.Name, err)
	}
	path := filepath.Join(c.Dir, k.ConfigFile())
	if err := os.WriteFile(path, text, 0o600); err != nil {
		return "", fmt.Errorf("sidecar %s: %w", c.Name, err)
	}
	if dk, ok := k.(Dynamic); ok {
		for _, l := range c.Listeners {
			if l.Inbound {
				continue
			}
			if err := dk.WriteUpstreams(c, l); err != nil {
				return "", fmt.Errorf("sidecar %s: %w", c.Name, err)
			}
		}
	}
	return path, nil
}

// writeAtomic replaces path with data by a rename within its directory, so
// that a program watching the file never reads half of it (Envoy's
// filesystem subscriptions require this).
func writeAtomic(path string, data []byte) error {
	if err := renameio.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SetUpstreams points every outbound listener of the layout that leads to
// component at addrs (the inbound listeners of its live replicas' proxies)
// and, for a Live kind, tells the running proxies. For another kind it
// returns ErrStatic: their proxies keep the upstreams they started with.
func (lay *Layout) SetUpstreams(component string, addrs []string) error {
	if _, live := lay.Kind.(Live); !live {
		for i := range lay.Proxies {
			retarget(&lay.Proxies[i].Config, component, addrs)
		}
		return fmt.Errorf("%s sidecars, on the way to %s: %w", lay.Kind.Name(), component, ErrStatic)
	}
	var errs []error
	for i := range lay.Proxies {
		errs = append(errs, SetUpstreams(lay.Kind, &lay.Proxies[i].Config, component, addrs))
	}
	return errors.Join(errs...)
}

// SetUpstreams points every outbound listener of the proxy configured by
// c that leads to component at addrs and, for a Live kind, tells the
// running proxy; another kind's keeps its upstreams (ErrStatic).
func SetUpstreams(k Kind, c *Config, component string, addrs []string) error {
	changed := retarget(c, component, addrs)
	if len(changed) == 0 {
		return nil
	}
	lk, live := k.(Live)
	if !live {
		return fmt.Errorf("%s sidecar %s, on the way to %s: %w", k.Name(), c.Name, component, ErrStatic)
	}
	if err := lk.Update(*c, changed); err != nil {
		return fmt.Errorf("sidecar %s: %w", c.Name, err)
	}
	return nil
}

// retarget sets the upstreams of c's outbound listeners to component, and
// returns those that changed.
func retarget(c *Config, component string, addrs []string) []Listener {
	var changed []Listener
	for j := range c.Listeners {
		l := &c.Listeners[j]
		if l.Inbound || l.Component != component || slices.Equal(l.Upstreams, addrs) {
			continue
		}
		l.Upstreams = slices.Clone(addrs)
		changed = append(changed, *l)
	}
	return changed
}

// InboundOf is the address of the inbound listener in front of component
// c on replica r of group g, or "" when no proxy has one.
func (lay *Layout) InboundOf(g, r int, c string) string {
	for _, px := range lay.Proxies {
		for _, l := range px.Config.Listeners {
			if l.Inbound && l.Group == g && l.Replica == r && l.Component == c {
				return loopback(l.Port)
			}
		}
	}
	return ""
}

// Scalable says why the layout's proxies cannot follow a group's replicas as
// they change while the proxies run, or nil when they can: each replica
// then gets its own sidecar (AddReplica), and the callers' proxies learn
// of it through SetUpstreams.
func (lay *Layout) Scalable() error {
	if _, ok := lay.Kind.(Live); !ok {
		return fmt.Errorf("%s sidecars are configured once, for the replicas they start with; scaling with sidecars needs a proxy that takes endpoint updates while it runs", lay.Kind.Name())
	}
	if lay.Node {
		return fmt.Errorf("a node proxy has one inbound listener per replica it started with; scaling with sidecars needs deploy.proxy_mode = \"sidecar\"")
	}
	return nil
}

// AddReplica lays out the sidecar of a new replica r of group g, whose
// host serves component c at app(c); its outbound listeners lead to
// upstreams(dep) for each component dep it calls in another group. The
// proxy joins the layout (secured as the others when Secure was called), and
// Peers[g][r] gives the addresses its host calls out through. port and dir
// are NewLayout's.
func (lay *Layout) AddReplica(topo *runtime.Topology, g, r int, app func(c string) string, upstreams func(dep string) []string, port func() (int, error), dir func(name string) (string, error)) (*Proxy, error) {
	if err := lay.Scalable(); err != nil {
		return nil, err
	}
	if _, ok := lay.Proxy(g, r); ok {
		return nil, fmt.Errorf("sidecar: replica %d of group %s has a proxy already", r, topo.Groups[g].Name)
	}
	var ls []Listener
	for _, c := range topo.Exposed(g) {
		p, err := port()
		if err != nil {
			return nil, err
		}
		ls = append(ls, Listener{Name: "in_" + c, Port: p, Upstreams: []string{app(c)}, Inbound: true, Component: c, Group: g, Replica: r})
	}
	for len(lay.Peers[g]) <= r {
		lay.Peers[g] = append(lay.Peers[g], nil)
	}
	peers := map[string]string{}
	for _, dep := range topo.Peers(g) {
		p, err := port()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("out_%d_%s", g, dep)
		if r > 0 {
			name = fmt.Sprintf("out_%d_%d_%s", g, r, dep)
		}
		ls = append(ls, Listener{Name: name, Port: p, Upstreams: slices.Clone(upstreams(dep)), Component: dep, Group: g, Replica: r})
		peers[dep] = loopback(p)
	}
	name := proxyName(topo, g, r, lay.Kind)
	d, err := dir(name)
	if err != nil {
		return nil, err
	}
	px := Proxy{Group: g, Replica: r, Config: Config{Name: name, Protocol: lay.protocol(topo), Listeners: ls, Dir: d, Threads: 2}}
	if lay.secure != nil {
		if err := lay.secure(&px.Config); err != nil {
			return nil, err
		}
	}
	lay.Peers[g][r] = peers
	lay.Proxies = append(lay.Proxies, px)
	return &lay.Proxies[len(lay.Proxies)-1], nil
}

func (lay *Layout) protocol(topo *runtime.Topology) Protocol {
	p, _ := ProtocolOf(topo.Transport) // NewLayout checked it
	return p
}

// Proxy returns the index in Proxies of the sidecar of replica r of group
// g.
func (lay *Layout) Proxy(g, r int) (int, bool) {
	for i, px := range lay.Proxies {
		if px.Group == g && px.Replica == r {
			return i, true
		}
	}
	return 0, false
}

// RemoveReplica takes the sidecar of replica r of group g out of the layout
// (its replica was scaled away) and returns it.
func (lay *Layout) RemoveReplica(g, r int) (Proxy, bool) {
	i, ok := lay.Proxy(g, r)
	if !ok {
		return Proxy{}, false
	}
	px := lay.Proxies[i]
	lay.Proxies = slices.Delete(lay.Proxies, i, i+1)
	if r < len(lay.Peers[g]) {
		lay.Peers[g][r] = nil
	}
	return px, true
}
