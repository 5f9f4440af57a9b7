package program

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/deploy/probe"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Where programs listen, and how they reach each other, is one of three
// places, as for svclab's own hosts:
//
//   - this machine's loopback: a free TCP port each, picked by svclab;
//   - unix sockets (deploy.network = "unix"): a path each, in a directory
//     of the deployment's own that Stop removes (and that the next svclab
//     removes when a killed one left it, internal/tempdir);
//   - the deploy.Network a deployer with machines hands over
//     (deploy.Options.Network: the netns deployer's, each machine a network
//     namespace): a port on the program's machine, picked there; the
//     program starts in its machine's namespace, reaches each callee at the
//     address the network gives for that path (a link's shaping proxy, or
//     a hop fault's), and is probed from where the network dials.
//
// The package knows nothing of namespaces: the network is the seam, as
// it is the local deployer's for svclab's hosts.

// maxSocketPath bounds a unix socket's path (sun_path holds 108 bytes,
// its terminating NUL included).
const maxSocketPath = 107

// network is the deployment's: "unix" or "tcp".
func (d *deployment) network() string {
	if d.topo.Network == "unix" {
		return "unix"
	}
	return "tcp"
}

// endpointAt is component name's endpoint at addr.
func (d *deployment) endpointAt(name, addr string) runtime.Endpoint {
	return runtime.Endpoint{Transport: d.cfg.Programs[name].Protocol, Network: d.network(), Addr: addr}
}

// pickAddress picks where replica i of component name listens. A TCP
// port comes with the listener that holds it, to be closed once every
// address is picked (so that no two are alike), just before the program
// binds it.
func (d *deployment) pickAddress(name string, i int) (addr string, hold io.Closer, err error) {
	switch {
	case d.network() == "unix":
		path := filepath.Join(d.dir, d.replicaName(name, i)+".sock")
		if len(path) > maxSocketPath {
			return "", nil, fmt.Errorf("component %s: its socket's path %s is %d bytes, more than a unix socket's %d: set TMPDIR to a shorter directory, or shorten the component's name", name, path, len(path), maxSocketPath)
		}
		return path, nil, nil
	case d.net != nil:
		l, err := d.net.Listen(d.topo.GroupOf(name))
		if err != nil {
			return "", nil, fmt.Errorf("pick a port for component %s: %w", name, err)
		}
		return l.Addr().String(), l, nil
	}
	l, err := ports.Listen()
	if err != nil {
		return "", nil, fmt.Errorf("pick a port for component %s: %w", name, err)
	}
	return l.Addr().String(), l, nil
}

// routePeers sets where each program reaches the components it calls: on
// a deploy.Network, the address the network gives for the path from its
// machine to the callee's (which carries the link's shaping, and a hop
// fault's proxy when one targets the callee); else the callee's own, or
// its fault proxy's (faults.go).
func (d *deployment) routePeers() error {
	if d.net == nil {
		return d.routeHops()
	}
	for _, name := range d.cfg.Names() {
		from := d.topo.GroupOf(name)
		for _, callee := range d.cfg.Programs[name].Deps() {
			ep, err := d.net.Peer(from, d.topo.GroupOf(callee), d.endpoint(callee))
			if err != nil {
				return fmt.Errorf("component %s's path to %s: %w", name, callee, err)
			}
			d.peers[name][callee] = ep.Addr
		}
	}
	return nil
}

// probeOf is the health check of a program of component name that
// listens at addr, dialled from where the network reaches it.
func (d *deployment) probeOf(name, addr string) probe.Probe {
	c := d.cfg.Programs[name]
	pr := probe.Probe{Protocol: c.Protocol, Network: d.network(), Addr: addr, Check: c.HealthOf()}
	if d.net != nil {
		pr.Dial = d.net.Dial
	}
	return pr
}

// enterFor moves the forking thread to where component name's programs
// start (its machine's namespace), or is nil to start them here.
func (d *deployment) enterFor(name string) func() (func() error, error) {
	if d.net == nil {
		return nil
	}
	g := d.topo.GroupOf(name)
	return func() (func() error, error) { return d.net.Enter(g) }
}

// machineCgroup is the control group of component name's machine, whose
// CPU set and memory budget its programs share with the machine's
// others, or nil (deploy.MachineCgroups).
func (d *deployment) machineCgroup(name string) *cgroup.Group {
	if d.net == nil {
		return nil
	}
	m := d.net.Capabilities().MachineCgroups
	if m == nil {
		return nil
	}
	return m.Cgroup(d.topo.GroupOf(name))
}

// checkNetwork refuses, at its key, what the programs' network cannot
// carry yet: the front before a component's replicas listens on
// svclab's own loopback TCP, which neither a machine's namespace nor a
// unix socket's caller reaches; a program on a unix socket has no port;
// sidecars do not run on the netns deployer's machines; and unix sockets
// are this machine's alone.
func checkNetwork(s *spec.Spec, cfg *Config) error {
	var errs []error
	d := s.Deploy
	unix := d.Network == "unix"
	switch {
	case unix && d.Deployer == "kube":
		return s.Errorf("deploy.network", "the kube deployer runs each program in a pod, reached over TCP at its port; leave deploy.network out")
	case unix && d.Deployer == "netns":
		return s.Errorf("deploy.network", "the netns deployer connects its machines over TCP, each program on its machine's address; leave deploy.network out")
	}
	if d.Deployer == "netns" || unix {
		where := fmt.Sprintf("deploy.deployer = %q", d.Deployer)
		if unix {
			where = "deploy.network = \"unix\""
		}
		for _, name := range slices.Sorted(maps.Keys(d.Replicas)) {
			if d.Replicas[name] > 1 {
				errs = append(errs, s.Errorf(spec.ScalingKey("replicas", name), "replicas of a program need the front svclab puts before them, which listens on this machine's loopback TCP and is not supported with %s yet; leave it out, or use deploy.deployer = \"local\" over TCP", where))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(d.Autoscale)) {
			errs = append(errs, s.Errorf(spec.ScalingKey("autoscale", name), "an autoscaled program needs the front svclab puts before its replicas, which listens on this machine's loopback TCP and is not supported with %s yet; leave it out, or use deploy.deployer = \"local\" over TCP", where))
		}
	}
	if d.Deployer == "netns" && d.Sidecar != "" && d.Sidecar != spec.SidecarNone {
		errs = append(errs, s.Errorf("deploy.sidecar", "the netns deployer does not run sidecars on its machines yet; leave deploy.sidecar out or use deploy.deployer = \"local\""))
	}
	if unix {
		for _, name := range cfg.Names() {
			p, key := cfg.Programs[name], "app.components."+name+"."
			for i, arg := range p.Command {
				if usesPort(arg) {
					errs = append(errs, s.Errorf(key+"command", "argument %d: {port} has no meaning on a unix socket (deploy.network = \"unix\"%s): write {listen}, the socket's path", i, s.Origin("deploy.network")))
				}
			}
			for _, k := range slices.Sorted(maps.Keys(p.Env)) {
				if usesPort(p.Env[k]) {
					errs = append(errs, s.Errorf(key+"env."+k, "{port} has no meaning on a unix socket (deploy.network = \"unix\"%s): write {listen}, the socket's path", s.Origin("deploy.network")))
				}
			}
		}
	}
	return errors.Join(errs...)
}
