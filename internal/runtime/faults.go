package runtime

import (
	"slices"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/spec"
)

// Fault is one fault of [deploy.faults], its target resolved to a group of
// the placement.
type Fault struct {
	// Kind is one of spec.FaultLatencySpike, FaultReset, FaultLinkCut,
	// FaultKill.
	Kind string
	// Target is the group or component as the spec names it; Group is the
	// index of its group.
	Target string
	Group  int
	// Start, Duration (0: to the end of the run) and Every (0: once) place
	// the fault's windows in the measurement.
	Start, Duration, Every time.Duration
	// Delay is a latency spike's added delay; Fraction the share of
	// connections a spike or reset acts on.
	Delay    time.Duration
	Fraction float64
	// Replica is the ordinal of the process a kill ends.
	Replica int
}

// Link reports whether the fault acts on a hop rather than a process.
func (f Fault) Link() bool { return f.Kind != spec.FaultKill }

// Window is one interval of a fault, as offsets in the measurement.
type Window struct{ From, To time.Duration }

// Windows lists the fault's windows within a measurement of length d; a
// kill's is the instant it happens.
func (f Fault) Windows(d time.Duration) []Window {
	var out []Window
	for at := f.Start; at < d && len(out) < 10000; at += f.Every {
		to := d
		if f.Duration > 0 {
			to = min(at+f.Duration, d)
		}
		if f.Kind == spec.FaultKill {
			to = at
		}
		out = append(out, Window{From: at, To: to})
		if f.Every <= 0 || f.Kind == spec.FaultKill {
			break
		}
	}
	return out
}

// resolveFaults resolves each fault's target to a group. A target that
// names nothing in the placement, a hop fault with the inproc transport
// (there is no hop), and a kill of a replica the group does not have are
// errors at the key's line.
func (p *Topology) resolveFaults(s *spec.Spec) error {
	f := s.Deploy.Faults
	add := func(kind, target string, fault Fault) error {
		key := "deploy.faults." + kind + ".target"
		g := slices.IndexFunc(p.Groups, func(g Group) bool { return g.Name == target })
		if g < 0 {
			g = p.GroupOf(target)
		}
		if g < 0 {
			var names []string
			for _, grp := range p.Groups {
				names = append(names, grp.Name)
			}
			return s.Errorf(key, "no group or component %q in placement %q (groups: %s)", target, p.Placement, strings.Join(names, ", "))
		}
		fault.Kind, fault.Target, fault.Group = kind, target, g
		if fault.Link() && p.InProcess() {
			return s.Errorf(key, "transport %q has no hop between groups to fault; use a network transport", p.Transport)
		}
		if kind == spec.FaultKill && fault.Replica >= p.Groups[g].Replicas {
			return s.Errorf("deploy.faults.kill.replica", "group %s has %d replica(s), ordinals from 0 to %d; got %d", p.Groups[g].Name, p.Groups[g].Replicas, p.Groups[g].Replicas-1, fault.Replica)
		}
		p.Faults = append(p.Faults, fault)
		return nil
	}
	if l := f.LatencySpike; l != nil {
		if err := add(spec.FaultLatencySpike, l.Target, Fault{Start: l.Start.D(), Duration: l.Duration.D(), Every: l.Every.D(), Delay: l.Delay.D(), Fraction: l.Probability}); err != nil {
			return err
		}
	}
	if r := f.Reset; r != nil {
		if err := add(spec.FaultReset, r.Target, Fault{Start: r.Start.D(), Duration: r.Duration.D(), Every: r.Every.D(), Fraction: r.Fraction}); err != nil {
			return err
		}
	}
	if c := f.LinkCut; c != nil {
		if err := add(spec.FaultLinkCut, c.Target, Fault{Start: c.Start.D(), Duration: c.Duration.D(), Every: c.Every.D(), Fraction: 1}); err != nil {
			return err
		}
	}
	if k := f.Kill; k != nil {
		if err := add(spec.FaultKill, k.Target, Fault{Start: k.Start.D(), Replica: k.Replica}); err != nil {
			return err
		}
	}
	return nil
}
