package runtime

import (
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/english"
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

// Every check of [deploy.faults] lives here, where each fault is resolved
// against the topology, so that a fault that cannot act is refused before
// anything starts, at its key, with every other mistake of the table:
// deployers and the runner only inject what passed. What a deployer
// cannot inject at all it refuses itself (the kube deployer: no fault).

// resolveFaults checks [deploy.faults] and resolves each fault's target
// to a group. The values alone (a target, a positive duration, a period
// longer than it, a fraction, a delay toxiproxy can count), then against
// the topology: a target that names nothing in the placement, a hop fault
// with the inproc transport (there is no hop) or off TCP (the fault
// proxies are TCP's), a hop fault on a group no other group calls (its
// hop carries nothing: the load's own calls into the entry are not a
// hop), and a kill of a replica the group does not have.
func (p *Topology) resolveFaults(s *spec.Spec) error {
	f := s.Deploy.Faults
	var errs []error
	add := func(kind string, w spec.FaultWindow, fault Fault) {
		if err := p.checkFault(s, kind, w, &fault); err != nil {
			errs = append(errs, err)
			return
		}
		p.Faults = append(p.Faults, fault)
	}
	if l := f.LatencySpike; l != nil {
		probability := l.Probability
		if !s.Written("deploy.faults.latency_spike.probability") {
			probability = 1
		}
		add(spec.FaultLatencySpike, l.Window(), Fault{Delay: l.Delay.D(), Fraction: probability})
	}
	if r := f.Reset; r != nil {
		add(spec.FaultReset, r.Window(), Fault{Fraction: r.Fraction})
	}
	if c := f.LinkCut; c != nil {
		add(spec.FaultLinkCut, c.Window(), Fault{Fraction: 1})
	}
	if k := f.Kill; k != nil {
		add(spec.FaultKill, spec.FaultWindow{Target: k.Target, Start: k.Start}, Fault{Replica: k.Replica})
	}
	return errors.Join(errs...)
}

// ResolveFaults resolves [deploy.faults] against p's groups, as Resolve
// does for an app of Go components: for a Placer, which makes its own
// groups of components that are not Go code. calls names what each of
// its components calls, from which a hop fault's target is checked to be
// called by another group.
func (p *Topology) ResolveFaults(s *spec.Spec, calls map[string][]string) error {
	if p.components == nil {
		p.components = map[string]Component{}
	}
	for name, deps := range calls {
		p.components[name] = Component{Name: name, Deps: deps}
	}
	return p.resolveFaults(s)
}

// checkFault checks the fault of kind written with window w, and fills
// fault's kind, target, group and times; its errors are joined.
func (p *Topology) checkFault(s *spec.Spec, kind string, w spec.FaultWindow, fault *Fault) error {
	key := "deploy.faults." + kind
	fault.Kind, fault.Target = kind, w.Target
	fault.Start, fault.Duration, fault.Every = w.Start.D(), w.Duration.D(), w.Every.D()
	var errs []error
	bad := func(k, format string, args ...any) { errs = append(errs, s.Errorf(k, format, args...)) }
	if w.Target == "" {
		what := "whose inbound hop the fault acts on"
		if kind == spec.FaultKill {
			what = "one of whose processes is killed"
		}
		bad(key, "needs target, the group (or a component of it) %s", what)
	}
	if kind == spec.FaultLinkCut && w.Duration <= 0 {
		bad(key+".duration", "must be positive, e.g. \"5s\", got %s", w.Duration)
	}
	if s.Written(key+".every") && w.Every > 0 && w.Duration == 0 {
		bad(key+".every", "needs a duration: a window lasting to the end of the run cannot repeat")
	} else if s.Written(key+".every") && w.Every > 0 && w.Duration >= w.Every {
		bad(key+".every", "must be longer than duration (%s), got %s", w.Duration, w.Every)
	}
	switch kind {
	case spec.FaultLatencySpike:
		if fault.Delay < time.Millisecond {
			bad(key+".delay", "must be at least 1ms (toxiproxy's latency counts milliseconds), got %s", fault.Delay)
		}
		checkFraction(bad, key+".probability", fault.Fraction)
	case spec.FaultReset:
		checkFraction(bad, key+".fraction", fault.Fraction)
	case spec.FaultKill:
		if fault.Replica < 0 {
			bad(key+".replica", "must be a replica's ordinal, from 0, got %d", fault.Replica)
		}
	}
	if len(errs) > 0 || w.Target == "" {
		return errors.Join(errs...)
	}
	return p.checkFaultTarget(s, key, fault)
}

// checkFraction refuses a share of calls or connections outside (0, 1].
func checkFraction(bad func(k, format string, args ...any), key string, v float64) {
	if math.IsNaN(v) || v <= 0 || v > 1 {
		bad(key, "must be a fraction above 0 and at most 1, got %g", v)
	}
}

// checkFaultTarget resolves fault's target, written under key, to a
// group that can suffer it.
func (p *Topology) checkFaultTarget(s *spec.Spec, key string, fault *Fault) error {
	target := key + ".target"
	g := slices.IndexFunc(p.Groups, func(g Group) bool { return g.Name == fault.Target })
	if g < 0 {
		g = p.GroupOf(fault.Target)
	}
	if g < 0 {
		var names []string
		for _, grp := range p.Groups {
			names = append(names, grp.Name)
		}
		return s.Errorf(target, "no group or component %q in placement %q (groups: %s)", fault.Target, p.Placement, strings.Join(names, ", "))
	}
	fault.Group = g
	switch {
	case fault.Link() && p.InProcess():
		return s.Errorf(target, "transport %q has no hop between groups to fault; use a network transport", p.Transport)
	case fault.Link() && p.Network != "tcp":
		return s.Errorf(target, "the hop into group %s is on network %q; faults act on tcp hops (leave deploy.network out)", p.Groups[g].Name, p.Network)
	case fault.Link() && !p.calledByGroups(g):
		return s.Errorf(target, "no other group calls group %s, so its hop carries nothing to fault; target a group another group calls", p.Groups[g].Name)
	case fault.Kind == spec.FaultKill && fault.Replica >= p.Groups[g].Replicas:
		return s.Errorf(key+".replica", "group %s has %s, ordinals from 0 to %d; got %d", p.Groups[g].Name, english.Count(p.Groups[g].Replicas, "replica"), p.Groups[g].Replicas-1, fault.Replica)
	}
	return nil
}

// calledByGroups reports whether another group calls a component of
// group g: whether g has a hop into it for a fault to act on.
func (p *Topology) calledByGroups(g int) bool {
	return slices.ContainsFunc(p.Groups[g].Components, func(c string) bool { return p.calledFromOutside(g, c) })
}

// CheckFaultTimes refuses a fault that would never act in a measurement
// of length measure, as its windows are offsets from the measurement's
// start (Windows): a start at or past its end, at the start's key. When
// load.requests may end the measurement sooner no plan can know it;
// spec.Spec.Inert says so.
func (p *Topology) CheckFaultTimes(s *spec.Spec, measure time.Duration) error {
	var errs []error
	for _, f := range p.Faults {
		if f.Start >= measure {
			errs = append(errs, s.Errorf("deploy.faults."+f.Kind+".start", "%s is not before the end of the measurement (%s long, timed from its start, after the warm-up), so the fault would never act; start it earlier or measure longer", f.Start, measure))
		}
	}
	return errors.Join(errs...)
}
