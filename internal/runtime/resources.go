package runtime

import (
	"errors"
	"slices"

	"github.com/svclab/svclab/internal/spec"
)

// resolveResources gives each group the limits of [deploy.resources]: a
// table names a group of the chosen placement (its components joined with
// "+") or one component, which stands for the group that holds it. Two
// tables that land on one group are a mistake, as is a name that is
// neither.
func (p *Topology) resolveResources(s *spec.Spec) error {
	if len(s.Deploy.Resources) == 0 {
		return nil
	}
	setBy := map[int]string{}
	names := make([]string, 0, len(s.Deploy.Resources))
	for n := range s.Deploy.Resources {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return s.Line("deploy.resources."+a) - s.Line("deploy.resources."+b)
	})
	var errs []error // every table's mistake at once
	for _, name := range names {
		key := "deploy.resources." + name
		i := slices.IndexFunc(p.Groups, func(g Group) bool {
			return g.Name == name || slices.Contains(g.Components, name)
		})
		if i < 0 {
			var known []string
			for _, g := range p.Groups {
				known = append(known, g.Name)
			}
			errs = append(errs, s.NameErrorf(key, "%q is no group of placement %q and no component of app %s (groups: %v)", name, p.Placement, p.App.Name, known))
			continue
		}
		if prev, ok := setBy[i]; ok {
			errs = append(errs, s.NameErrorf(key, "group %s already has its resources from deploy.resources.%s; write one table per group", p.Groups[i].Name, prev))
			continue
		}
		setBy[i] = name
		p.Groups[i].Resources = s.Deploy.Resources[name]
	}
	return errors.Join(errs...)
}

// ResolveSizes resolves [deploy.resources], [deploy.replicas] and
// [deploy.autoscale] against p's groups, as Resolve does for an app of
// Go components: for a Placer, which makes its own groups.
func (p *Topology) ResolveSizes(s *spec.Spec) error {
	if err := p.resolveResources(s); err != nil {
		return err
	}
	return p.resolveScaling(s)
}
