package program

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/deploy/probe"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/tempdir"
)

// Sidecars (deploy.sidecar) bring the mesh to programs that know nothing
// of svclab, as Istio does: each program calls each callee through an
// outbound listener of its own proxy ({addr:<name>} is that listener),
// which forwards to the callee's proxy's inbound listener (through the
// callee's fault proxy when a hop fault targets it: faults.go), which
// forwards to the program. With deploy.mtls the proxy-to-proxy leg is mutual TLS
// with each program's SPIFFE identity from a per-deployment CA
// (internal/pki), so a client without the run's certificate is refused at
// every inbound listener; the program-to-proxy legs stay plaintext on
// loopback. The load reaches the entry program at its own address, as
// a client outside the mesh reaches an ingress. The proxies are the
// sidecar layer's (internal/deploy/sidecar) configurations, one proxy
// per program and protocol, since a proxy's listeners speak one.

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

// layOutSidecars makes every program's proxies, with their ports, and
// rewrites each program's view of its callees (d.peers) to its outbound
// listeners.
func (d *deployment) layOutSidecars(s *spec.Spec) error {
	k, err := sidecar.Lookup(s.Deploy.Sidecar)
	if err != nil {
		return err
	}
	if d.sidecarBin, err = k.Binary(); err != nil {
		return err
	}
	d.sidecarKind = k
	if d.dir, err = tempdir.MkdirTemp(d.id + "-"); err != nil {
		return fmt.Errorf("deployment %s: temp dir: %w", d.id, err)
	}
	names := d.cfg.Names()
	inbound := map[string]string{}
	for _, name := range names {
		addr, err := freePort()
		if err != nil {
			return err
		}
		inbound[name] = addr
	}
	var ca *pki.CA
	prefix := strings.TrimSuffix(pki.ID(d.id, "x").String(), "x")
	if s.Deploy.MTLS {
		if ca, err = pki.NewCA(d.id); err != nil {
			return err
		}
	}
	tlsOf := func(name, peer string, isPrefix bool) (*sidecar.TLS, error) {
		if ca == nil {
			return nil, nil
		}
		f, err := ca.Write(d.dir, name)
		if err != nil {
			return nil, err
		}
		return sidecar.NewTLS(d.dir, f.CA, f.Cert, f.Key, peer, isPrefix)
	}
	for _, name := range names {
		byProto := map[sidecar.Protocol][]sidecar.Listener{}
		in, err := tlsOf(name, prefix, true)
		if err != nil {
			return err
		}
		proto := protocolOf(d.cfg.Programs[name].Protocol)
		byProto[proto] = append(byProto[proto], sidecar.Listener{
			Name: "in_" + name, Port: portOf(inbound[name]), Upstreams: []string{d.replicas[name][0]},
			Inbound: true, Component: name, TLS: in,
		})
		for _, dep := range d.cfg.Programs[name].Deps() {
			out, err := freePort()
			if err != nil {
				return err
			}
			t, err := tlsOf(name, pki.ID(d.id, dep).String(), false)
			if err != nil {
				return err
			}
			up, err := d.hop(dep, inbound[dep])
			if err != nil {
				return err
			}
			dp := protocolOf(d.cfg.Programs[dep].Protocol)
			byProto[dp] = append(byProto[dp], sidecar.Listener{
				Name: "out_" + name + "_" + dep, Port: portOf(out), Upstreams: []string{up},
				Component: dep, TLS: t,
			})
			d.peers[name][dep] = out
		}
		for _, proto := range slices.Sorted(maps.Keys(byProto)) {
			cname := name + "." + k.Name()
			if len(byProto) > 1 {
				cname += "-" + strings.ReplaceAll(string(proto), "/", "")
			}
			dir := filepath.Join(d.dir, cname)
			if err := os.Mkdir(dir, 0o700); err != nil {
				return fmt.Errorf("sidecar %s: %w", cname, err)
			}
			d.proxies = append(d.proxies, proxyOf{component: name, c: sidecar.Config{
				Name: cname, Protocol: proto, Listeners: byProto[proto], Dir: dir, Threads: 1,
			}})
		}
	}
	d.inbound = inbound
	return nil
}

// proxyOf is one proxy of a program.
type proxyOf struct {
	component string
	c         sidecar.Config
}

// startSidecars starts every proxy and waits until each listens.
func (d *deployment) startSidecars(ctx context.Context, reader *procstat.Reader, opts deploy.Options) error {
	var started []*process
	for _, px := range d.proxies {
		path, err := sidecar.Write(d.sidecarKind, px.c)
		if err != nil {
			return err
		}
		l := launch{name: px.c.Name, argv: append([]string{d.sidecarBin}, d.sidecarKind.Args(path, px.c)...), dir: px.c.Dir, log: opts.Log,
			env: append(os.Environ(), OwnerEnv+"="+ownerMark())}
		p, err := start(l, func(pid int) deploy.ResourceSource { return reader.Process(pid) })
		if err != nil {
			return fmt.Errorf("sidecar %s: %w", px.c.Name, err)
		}
		p.info.Role, p.info.Group, p.info.Components = deploy.RoleSidecar, px.component, []string{px.component}
		p.component = px.component
		d.mu.Lock()
		d.procs = append(d.procs, p)
		d.mu.Unlock()
		started = append(started, p)
	}
	for i, p := range started {
		for _, l := range d.proxies[i].c.Listeners {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port))
			if err := d.waitListening(ctx, p, addr, opts); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitListening waits for proxy p to accept on addr.
func (d *deployment) waitListening(ctx context.Context, p *process, addr string, opts deploy.Options) error {
	timeout := opts.ReadyTimeout
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

// freePort picks a free loopback port, as host:port.
func freePort() (string, error) {
	a, err := ports.Free(1)
	if err != nil {
		return "", fmt.Errorf("pick a port for a sidecar: %w", err)
	}
	return a[0], nil
}

func portOf(hostport string) int {
	_, p, _ := net.SplitHostPort(hostport)
	n, _ := strconv.Atoi(p)
	return n
}
