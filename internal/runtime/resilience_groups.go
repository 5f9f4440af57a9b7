package runtime

import (
	"errors"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// resolveResilienceGroups checks that each [deploy.resilience.groups.NAME]
// names a group or a component of the placement, as a fault's target
// does, and that the placement has hops between groups for it to act on.
func (p *Topology) resolveResilienceGroups(s *spec.Spec) error {
	var errs []error // every table's mistake at once
	for _, name := range s.Deploy.Resilience.GroupNames() {
		key := "deploy.resilience.groups." + name
		if !slices.ContainsFunc(p.Groups, func(g Group) bool { return g.Name == name }) && p.GroupOf(name) < 0 {
			var names []string
			for _, g := range p.Groups {
				names = append(names, g.Name)
			}
			errs = append(errs, s.NameErrorf(key, "no group or component %q in placement %q (groups: %s)", name, p.Placement, strings.Join(names, ", ")))
			continue
		}
		if p.InProcess() {
			errs = append(errs, s.NameErrorf(key, "transport %q has no hop between groups to make resilient; use a network transport", p.Transport))
		}
	}
	return errors.Join(errs...)
}

// ResilienceProto is deploy.resilience with its per-group policies as the
// host protocol carries them: each group's policy under the name of every
// component of the group (a host knows its peers by component), a
// component's own table before its group's, as the more specific rule wins
// in Istio's routing. Nil when nothing is on.
func (p *Topology) ResilienceProto() *hostv1.Resilience {
	r := p.Mesh.Resilience
	out := ResilienceProto(r)
	if out == nil || len(r.Groups) == 0 {
		return out
	}
	out.Peers = map[string]*hostv1.Resilience{}
	policy := func(g spec.Resilience) *hostv1.Resilience {
		if pr := ResilienceProto(g); pr != nil {
			return pr
		}
		return &hostv1.Resilience{} // nothing on: calls go through as they are
	}
	for _, name := range r.GroupNames() {
		if i := slices.IndexFunc(p.Groups, func(g Group) bool { return g.Name == name }); i >= 0 {
			for _, c := range p.Groups[i].Components {
				out.Peers[c] = policy(r.Groups[name])
			}
		}
	}
	for _, name := range r.GroupNames() {
		if p.GroupOf(name) >= 0 && !slices.ContainsFunc(p.Groups, func(g Group) bool { return g.Name == name }) {
			out.Peers[name] = policy(r.Groups[name])
		}
	}
	return out
}
