// Package sidecar writes the configuration of a service mesh's data plane:
// real proxy programs (Envoy, nginx, HAProxy) beside the processes of a
// topology, as Istio's control plane writes Envoy's.
//
// Layout turns a topology into proxies and the addresses the hosts must use
// instead of each other's: every call goes app → local proxy (outbound
// listener) → remote proxy (inbound listener) → app, and the client's calls
// enter through the entry's inbound listener. In sidecar mode each process
// has its own proxy; in node mode one proxy per host (here: the machine)
// carries every listener, as Istio ambient's ztunnel does.
//
// Each proxy program is a Kind: one small generator that renders a Config
// in that program's own format. The proxies carry gRPC as HTTP/2 and the
// http transport as HTTP/1.1 at layer 7; netrpc and protorpc, which are not
// HTTP, as plain TCP streams. A deployer starts the programs; this package
// only finds them and writes what they read.
package sidecar

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Protocol is what a proxy listener speaks.
type Protocol string

// The protocols the transports need.
const (
	HTTP1 Protocol = "http/1.1" // the http transport
	HTTP2 Protocol = "h2c"      // grpc, cleartext HTTP/2 as grpc-go speaks it
	TCP   Protocol = "tcp"      // netrpc, protorpc: an opaque byte stream
)

// ProtocolOf is the protocol a proxy speaks to carry transport.
func ProtocolOf(transport string) (Protocol, error) {
	switch transport {
	case "grpc":
		return HTTP2, nil
	case "http":
		return HTTP1, nil
	case "netrpc", "protorpc":
		return TCP, nil
	}
	return "", fmt.Errorf("no proxy carries transport %q", transport)
}

// Listener is one listening socket of a proxy and where it sends what
// arrives.
type Listener struct {
	// Name is unique within the proxy: "in_hop2" for the inbound listener
	// of component hop2, "out_0_hop2" for group 0's way to hop2.
	Name string
	// Port is the loopback port to listen on.
	Port int
	// Upstreams are host:port of the app (inbound: its own replica) or of
	// the inbound listeners of the remote proxies, one per replica of the
	// callee (outbound), among which the proxy balances (round robin).
	Upstreams []string
	// Inbound marks a listener in front of the app, as opposed to one
	// the app calls out through.
	Inbound bool
	// Component is the component the listener leads to: the app's own
	// (inbound) or the one it calls (outbound).
	Component string
	// Group is the index of the group the listener serves: the callee's
	// (inbound) or the caller's (outbound); Replica is the ordinal of
	// that group's replica (0 for a node proxy's outbound listeners).
	Group, Replica int
	// TLS, when set, makes the proxy-to-proxy leg mutual TLS: an inbound
	// listener serves TLS and demands a client certificate; an outbound
	// one presents its certificate to the callee's proxy. The app-to-proxy
	// leg stays plaintext on loopback, as in Istio.
	TLS *TLS
}

// TLS is one listener's identity and trust, as PEM files in the
// deployment's private directory.
type TLS struct {
	// CA is the run's CA certificate, the only one trusted.
	CA string
	// Cert and Key are the identity this side presents; Bundle is the
	// two in one file, for programs that want that (HAProxy).
	Cert, Key, Bundle string
	// Peer is the identity (SPIFFE URI SAN) the other side must present:
	// the callee's ID on an outbound listener, and on an inbound one a
	// prefix every workload of the run has (PeerPrefix). Envoy checks it;
	// nginx and HAProxy cannot match URI SANs and check the chain to the
	// run's CA (and, outbound, the name localhost, which every leaf
	// carries).
	Peer       string
	PeerPrefix bool
}

// NewTLS writes Bundle (cert then key, mode 0600) into dir and returns the
// listener TLS for these files.
func NewTLS(dir, ca, cert, key, peer string, prefix bool) (*TLS, error) {
	c, err := os.ReadFile(cert)
	if err != nil {
		return nil, fmt.Errorf("sidecar tls: %w", err)
	}
	k, err := os.ReadFile(key)
	if err != nil {
		return nil, fmt.Errorf("sidecar tls: %w", err)
	}
	bundle := filepath.Join(dir, strings.TrimSuffix(filepath.Base(cert), filepath.Ext(cert))+".bundle.pem")
	if err := os.WriteFile(bundle, append(append(c, '\n'), k...), 0o600); err != nil {
		return nil, fmt.Errorf("sidecar tls: %w", err)
	}
	return &TLS{CA: ca, Cert: cert, Key: key, Bundle: bundle, Peer: peer, PeerPrefix: prefix}, nil
}

// Config is what one proxy instance needs to know.
type Config struct {
	// Name labels the instance, e.g. "hop2.envoy".
	Name     string
	Protocol Protocol
	// Listeners in a fixed order.
	Listeners []Listener
	// Dir is a private directory for the configuration and whatever the
	// program writes at run time (pid and temp files).
	Dir string
	// Threads is how many worker threads the proxy runs. Istio's default
	// proxy concurrency is 2.
	Threads int
	// Tracing, when set, makes a proxy that can (Envoy) emit a span per
	// request it carries over OTLP, as Istio's observability setup does;
	// trace headers pass through every proxy either way.
	Tracing *Tracing
	// Admin, when not 0, is the loopback port of the proxy's admin API,
	// whose /stats/prometheus the run's Prometheus scrapes under
	// deploy.metrics. Envoy alone renders it.
	Admin int
}

// Tracing is where a proxy sends its spans and how many it keeps.
type Tracing struct {
	// OTLP is the collector's OTLP/gRPC host:port, plaintext on loopback.
	OTLP string
	// Ratio is the share of requests without a sampled caller that are
	// traced, (0, 1].
	Ratio float64
	// Service is the service the spans report, empty for the proxy's
	// Name.
	Service string
	// Components tags each span with the component of its listener, as
	// svclab's hosts tag theirs: svclab.component on an inbound
	// listener's (the component served), svclab.peer on an outbound one's
	// (the component called). Set where the proxies' spans stand for
	// their apps', which emit none (the exec app's programs).
	Components bool
}

// Kind is one proxy program: it finds its binary and renders a Config in
// the program's own format.
type Kind interface {
	// Name is the value of deploy.sidecar.
	Name() string
	// Binary is the path of the program, or an error saying how to
	// install it.
	Binary() (string, error)
	// ConfigFile is the file name Render's output is written to in
	// Config.Dir; its extension tells some programs the format.
	ConfigFile() string
	// Render returns the configuration file's content.
	Render(c Config) ([]byte, error)
	// Args run the program in the foreground on the configuration at path,
	// logging warnings and errors to stderr.
	Args(path string, c Config) []string
	// CheckArgs make the program check the configuration at path and
	// exit, as `nginx -t` does.
	CheckArgs(path string, c Config) []string
}

var kinds = map[string]Kind{}

func register(k Kind) { kinds[k.Name()] = k }

// Lookup returns the Kind for a value of deploy.sidecar.
func Lookup(name string) (Kind, error) {
	if k, ok := kinds[name]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown sidecar %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the proxy programs, sorted.
func Names() []string {
	var out []string
	for n := range kinds {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Check reports, before anything starts, what would stop s's sidecars
// from running: a program that is not installed. The spec package checks
// the names and the transport.
func Check(s *spec.Spec) error {
	if s.Deploy.Sidecar == "" || s.Deploy.Sidecar == spec.SidecarNone {
		return nil
	}
	k, err := Lookup(s.Deploy.Sidecar)
	if err != nil {
		return s.Errorf("deploy.sidecar", "%w", err)
	}
	if _, err := ProtocolOf(s.Deploy.Transport); err != nil {
		return s.Errorf("deploy.transport", "%w with deploy.sidecar = %q", err, k.Name())
	}
	if _, err := k.Binary(); err != nil {
		return s.Errorf("deploy.sidecar", "%w", err)
	}
	return nil
}

// findBinary returns the first of env's value, the candidates, and name
// on PATH that is an executable file.
func findBinary(name, env string, candidates []string, install string) (string, error) {
	if v := os.Getenv(env); v != "" {
		if isExecutable(v) {
			return v, nil
		}
		return "", fmt.Errorf("%s=%s is not an executable file", env, v)
	}
	for _, c := range candidates {
		if isExecutable(c) {
			return c, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found (looked at $%s, %s and PATH); %s", name, env, strings.Join(candidates, ", "), install)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// CacheDir is svclab's per-user cache, where `make envoy` installs Envoy:
// $XDG_CACHE_HOME/svclab, or ~/.cache/svclab.
func CacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "svclab")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "svclab-cache")
	}
	return filepath.Join(home, ".cache", "svclab")
}

// Proxy is one proxy process of a layout.
type Proxy struct {
	// Group is the index of the group it sits beside, or -1 for a node
	// proxy that serves every group; Replica is the ordinal of the
	// group's replica it sits beside (0 for a node proxy).
	Group, Replica int
	Config         Config
}

// Layout is a topology's proxies and the way its hosts reach each other
// through them.
type Layout struct {
	Kind    Kind
	Node    bool // one proxy for every group (deploy.proxy_mode = "node")
	Proxies []Proxy
	// Peers maps group → replica → component it calls in another group →
	// the address of its outbound listener for that component.
	Peers [][]map[string]string
	// Inbound maps each exposed component to the address of each of its
	// replicas' inbound listeners, where clients (and remote proxies)
	// reach it.
	Inbound map[string][]string

	// secure, set by Secure, gives a proxy added later (AddReplica) the
	// same mutual TLS as the first ones.
	secure func(*Config) error
}

// NewLayout lays out the proxies of topo. appAddr gives the loopback
// host:port where each replica of group g serves component c, in replica
// order (topo's Replicas of each group); port reserves a free loopback
// port; dir makes a private directory for one proxy.
//
// In sidecar mode every replica has its own proxy, whose outbound
// listeners balance over the callee's replicas' proxies; in node mode the
// one proxy has an inbound listener per replica and outbound listeners
// that balance over them.
func NewLayout(topo *runtime.Topology, appAddr func(g int, c string) []string, port func() (int, error), dir func(name string) (string, error)) (*Layout, error) {
	if topo.Sidecar == "" || topo.Sidecar == spec.SidecarNone {
		return nil, errors.New("sidecar: the topology has no sidecar")
	}
	k, err := Lookup(topo.Sidecar)
	if err != nil {
		return nil, err
	}
	proto, err := ProtocolOf(topo.Transport)
	if err != nil {
		return nil, err
	}
	node := topo.ProxyMode == spec.ProxyModeNode
	replicas := func(g int) int { return max(1, topo.Groups[g].Replicas) }
	lay := &Layout{Kind: k, Node: node, Peers: make([][]map[string]string, len(topo.Groups)), Inbound: map[string][]string{}}
	// listeners[g][r] are those of replica r of group g.
	listeners := make([][][]Listener, len(topo.Groups))
	for g := range topo.Groups {
		listeners[g] = make([][]Listener, replicas(g))
		lay.Peers[g] = make([]map[string]string, replicas(g))
	}
	// Inbound first: outbound listeners point at them.
	for g := range topo.Groups {
		for _, c := range topo.Exposed(g) {
			apps := appAddr(g, c)
			if len(apps) != replicas(g) {
				return nil, fmt.Errorf("sidecar: group %s has %d replicas but %d addresses of %s", topo.Groups[g].Name, replicas(g), len(apps), c)
			}
			for r, app := range apps {
				p, err := port()
				if err != nil {
					return nil, err
				}
				name := "in_" + c
				if node && len(apps) > 1 {
					name = fmt.Sprintf("in_%s_%d", c, r)
				}
				listeners[g][r] = append(listeners[g][r], Listener{Name: name, Port: p, Upstreams: []string{app}, Inbound: true, Component: c, Group: g, Replica: r})
				lay.Inbound[c] = append(lay.Inbound[c], loopback(p))
			}
		}
	}
	for g, grp := range topo.Groups {
		for r := range replicas(g) {
			lay.Peers[g][r] = map[string]string{}
			if node && r > 0 {
				// One proxy: every replica of the group calls out
				// through the same listeners.
				lay.Peers[g][r] = lay.Peers[g][0]
				continue
			}
			for _, name := range grp.Components {
				c, _ := topo.Component(name)
				for _, dep := range c.Deps {
					if topo.GroupOf(dep) == g || lay.Peers[g][r][dep] != "" {
						continue
					}
					p, err := port()
					if err != nil {
						return nil, err
					}
					lname := fmt.Sprintf("out_%d_%s", g, dep)
					if !node && r > 0 {
						lname = fmt.Sprintf("out_%d_%d_%s", g, r, dep)
					}
					listeners[g][r] = append(listeners[g][r], Listener{Name: lname, Port: p, Upstreams: slices.Clone(lay.Inbound[dep]), Component: dep, Group: g, Replica: r})
					lay.Peers[g][r][dep] = loopback(p)
				}
			}
		}
	}
	add := func(group, replica int, name string, ls []Listener) error {
		if len(ls) == 0 {
			return nil // a group nobody calls and that calls nobody
		}
		d, err := dir(name)
		if err != nil {
			return err
		}
		lay.Proxies = append(lay.Proxies, Proxy{Group: group, Replica: replica, Config: Config{Name: name, Protocol: proto, Listeners: ls, Dir: d, Threads: 2}})
		return nil
	}
	if node {
		var all []Listener
		for g := range listeners {
			for _, ls := range listeners[g] {
				all = append(all, ls...)
			}
		}
		if err := add(-1, 0, "node."+k.Name(), all); err != nil {
			return nil, err
		}
		return lay, nil
	}
	for g := range topo.Groups {
		for r, ls := range listeners[g] {
			if err := add(g, r, proxyName(topo, g, r, k), ls); err != nil {
				return nil, err
			}
		}
	}
	return lay, nil
}

// Secure makes every proxy-to-proxy leg of the layout mutual TLS: an
// inbound listener presents the credentials of its component and accepts
// any workload of the run (peerPrefix, e.g. "spiffe://svclab/<run>/"); an
// outbound listener presents those of its group's first component and
// demands the callee's identity, peerID(component). creds gives each
// component's CA, certificate and key files (internal/pki writes them).
func (lay *Layout) Secure(topo *runtime.Topology, creds func(component string) (ca, cert, key string), peerPrefix string, peerID func(component string) string) error {
	lay.secure = func(c *Config) error {
		for j := range c.Listeners {
			l := &c.Listeners[j]
			own, peer, prefix := l.Component, peerID(l.Component), false
			if l.Inbound {
				peer, prefix = peerPrefix, true
			} else {
				own = topo.Groups[l.Group].Components[0]
			}
			ca, cert, key := creds(own)
			t, err := NewTLS(c.Dir, ca, cert, key, peer, prefix)
			if err != nil {
				return err
			}
			l.TLS = t
		}
		return nil
	}
	for i := range lay.Proxies {
		if err := lay.secure(&lay.Proxies[i].Config); err != nil {
			return err
		}
	}
	return nil
}

// proxyName names the sidecar of replica r of group g after the replica,
// as the deployer names its host; a replica added to a group that started
// with one is numbered too, as its sidecar needs a directory of its own.
func proxyName(topo *runtime.Topology, g, r int, k Kind) string {
	grp := topo.Groups[g]
	if grp.Replicas > 1 || grp.Autoscale != nil || r > 0 {
		return fmt.Sprintf("%s#%d.%s", grp.Name, r, k.Name())
	}
	return grp.Name + "." + k.Name()
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
