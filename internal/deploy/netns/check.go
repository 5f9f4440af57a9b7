package netns

import (
	"errors"
	"fmt"
	"maps"
	goruntime "runtime"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// clientName is the load generator's endpoint, which [deploy.links] may
// name beside the machines ("client-vm1").
const clientName = "client"

// layout is what a spec says about machines and links, checked against a
// topology.
type layout struct {
	machines  []string        // in the spec's order
	machineOf []int           // group index → machine index
	indexOf   map[string]int  // machine name → index
	cpus      []int           // per machine; 0 unconfined
	memory    []spec.ByteSize // per machine
	spec      map[string]deploy.Machine
	links     *links
}

// link is the link between endpoints a and b (machine names or clientName).
func (p *layout) link(a, b string) Link { return p.links.between(a, b) }

// checkSpec checks [deploy.hosts], [deploy.link] and [deploy.links]
// against the topology before anything starts (Traits.CheckSpec).
func checkSpec(s *spec.Spec, topo *runtime.Topology) error {
	_, err := newLayout(s, topo)
	return err
}

func newLayout(s *spec.Spec, topo *runtime.Topology) (*layout, error) {
	if s == nil {
		return nil, fmt.Errorf("deployer %s: the topology carries no spec", Name)
	}
	// Every mistake at once, in file order (of each machine's groups key).
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, s.Errorf(key, format, args...)) }
	if topo.Network == "unix" {
		bad("deploy.network", "the %s deployer connects machines over TCP; leave deploy.network out or write \"tcp\"", Name)
	}
	// Sidecars and the ingress are started by the local deployer beside
	// svclab, outside the machines' namespaces: refused until they are placed
	// in them, rather than measured on the wrong side of every link.
	if topo.Sidecar != "" && topo.Sidecar != spec.SidecarNone {
		bad("deploy.sidecar", "the %s deployer does not run sidecars yet; leave deploy.sidecar out or use deploy.deployer = \"local\"", Name)
	}
	if ing := runtime.IngressOf(topo); ing != "" {
		bad("app.ingress", "the %s deployer does not run an ingress (%s) yet; leave app.ingress out or use deploy.deployer = \"local\"", Name, ing)
	}
	// The mesh's credentials name loopback, and its backends listen on
	// svclab's own loopback, which no machine's namespace reaches: refused,
	// as sidecars are, rather than run with spans and series lost.
	if keys := topo.Mesh.Keys(); len(keys) > 0 {
		bad(keys[0], "the %s deployer does not run mesh features (mTLS, tracing, metrics) across its machines yet; leave %s out or use deploy.deployer = \"local\"", Name, keys[0])
	}
	// The machines and links as far as they decoded: their mistakes are
	// reported with those of the keys that decoded.
	machines, machinesErr := deploy.MachinesOf(s)
	lks, linksErr := linksOf(s)
	errs = append(errs, machinesErr, linksErr)
	p := &layout{spec: machines, links: lks, indexOf: map[string]int{}, machineOf: make([]int, len(topo.Groups))}
	for i := range p.machineOf {
		p.machineOf[i] = -1
	}
	if len(machines) == 0 && machinesErr == nil {
		bad("deploy.deployer", "the %s deployer needs machines: add [deploy.hosts.<name>] tables with groups = [...]", Name)
	}
	groups := map[string]int{}
	var groupNames []string
	for i, g := range topo.Groups {
		groups[g.Name] = i
		groupNames = append(groupNames, g.Name)
	}
	for _, h := range deploy.MachineNames(s, machines) {
		hk := deploy.MachineKey(h, "")
		if h == clientName {
			errs = append(errs, s.NameErrorf(hk, "%q is the load generator's name; call the machine something else", clientName))
		}
		if strings.Contains(h, "-") {
			errs = append(errs, s.NameErrorf(hk, "a machine name must not contain \"-\", which separates the machines of a link (\"vm1-vm2\")"))
		}
		m := machines[h]
		idx := len(p.machines)
		p.machines = append(p.machines, h)
		p.indexOf[h] = idx
		if len(m.Groups) == 0 {
			bad(deploy.MachineKey(h, "groups"), "machine %s runs no group: list groups of placement %s (%s)", h, topo.Placement, strings.Join(groupNames, ", "))
		}
		for _, g := range m.Groups {
			gi, ok := groups[g]
			switch {
			case !ok:
				bad(deploy.MachineKey(h, "groups"), "placement %s has no group %q (its groups: %s)", topo.Placement, g, strings.Join(groupNames, ", "))
			case p.machineOf[gi] >= 0:
				bad(deploy.MachineKey(h, "groups"), "group %q is on two machines, %s and %s; a group runs on one", g, p.machines[p.machineOf[gi]], h)
			default:
				p.machineOf[gi] = idx
			}
		}
		if m.CPUs < 0 {
			bad(deploy.MachineKey(h, "cpus"), "must not be negative, got %d", m.CPUs)
		} else if n := goruntime.NumCPU(); m.CPUs > n {
			bad(deploy.MachineKey(h, "cpus"), "machine %s asks for %d cores; this machine has %d", h, m.CPUs, n)
		}
		if m.Memory < 0 {
			bad(deploy.MachineKey(h, "memory"), "must not be negative")
		}
		p.cpus = append(p.cpus, m.CPUs)
		p.memory = append(p.memory, m.Memory)
	}
	for i, h := range p.machineOf {
		// A machine whose table is wrong may be the one meant to run
		// the group; with none, that is the mistake.
		if h < 0 && machinesErr == nil && len(machines) > 0 {
			bad("deploy.placement", "group %q of placement %s is on no machine: add it to the groups of one [deploy.hosts.<name>]", topo.Groups[i].Name, topo.Placement)
		}
	}
	errs = append(errs, checkLink(s, "", lks.all, linksErr == nil))
	for _, pair := range slices.Sorted(maps.Keys(lks.pairs)) {
		a, b, ok := strings.Cut(pair, "-")
		known := func(n string) bool { _, ok := p.indexOf[n]; return ok || n == clientName }
		if !ok || !known(a) || !known(b) || a == b {
			errs = append(errs, s.NameErrorf(linkKey(pair, ""), "names no pair of machines: write \"a-b\" with two of %s, %s", strings.Join(p.machines, ", "), clientName))
			continue
		}
		errs = append(errs, checkLink(s, pair, lks.pairs[pair], linksErr == nil))
	}
	if machinesErr == nil {
		// It weighs the machines' keys against each other: one written
		// wrong reads as its default.
		errs = append(errs, checkMachineResources(s, p))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// checkLink checks the keys of one link table, every mistake at once.
// Durations are never negative (spec.Duration refuses them as it
// decodes). Jitter is compared with latency only when the links decoded
// (decoded): a latency written wrong reads as none.
func checkLink(s *spec.Spec, pair string, l Link, decoded bool) error {
	var errs []error
	if l.Loss < 0 || l.Loss >= 1 {
		errs = append(errs, s.Errorf(linkKey(pair, "loss"), "must be a fraction in [0, 1), got %g", l.Loss))
	}
	if decoded && l.Jitter > l.Latency {
		errs = append(errs, s.Errorf(linkKey(pair, "jitter"), "must not exceed latency (%s): a link cannot deliver before it was sent, got %s", l.Latency, l.Jitter))
	}
	return errors.Join(errs...)
}
