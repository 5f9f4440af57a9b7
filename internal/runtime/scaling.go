package runtime

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	"github.com/svclab/svclab/internal/spec"
)

// resolveScaling gives each group its replicas and autoscaler from
// [deploy.replicas] and [deploy.autoscale], whose keys name a group or any
// component of one. A key that names nothing in the placement, two keys
// that name one group, replicas outside the autoscaler's bounds, and
// replicas with the inproc transport are errors at the key's line.
func (p *Topology) resolveScaling(s *spec.Spec) error {
	p.Balancer = s.Deploy.Balancer
	if p.Balancer == "" {
		p.Balancer = spec.BalancerRoundRobin
	}
	for i := range p.Groups {
		p.Groups[i].Replicas = 1
	}
	// Every mistake at once: each key that names a group is checked
	// whatever the others name.
	replicas, rerr := p.scalingGroups(s, "replicas", slices.Collect(maps.Keys(s.Deploy.Replicas)))
	autoscale, aerr := p.scalingGroups(s, "autoscale", slices.Collect(maps.Keys(s.Deploy.Autoscale)))
	errs := []error{rerr, aerr}
	for g, key := range autoscale {
		a, err := p.autoscaleOf(s, g, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Groups[g].Autoscale = a
		p.Groups[g].Replicas = a.Min
	}
	for g, key := range replicas {
		n := s.Deploy.Replicas[key]
		if a := p.Groups[g].Autoscale; a != nil && (n < a.Min || n > a.Max) {
			errs = append(errs, s.Errorf(spec.ScalingKey("replicas", key), "%d is outside the bounds of %s (%d to %d)",
				n, spec.ScalingKey("autoscale", autoscale[g]), a.Min, a.Max))
			continue
		}
		p.Groups[g].Replicas = n
	}
	if e := p.EntryGroup(); p.Transport == inproc.Name && (p.Groups[e].Replicas > 1 || p.Groups[e].Autoscale != nil) {
		key := spec.ScalingKey("replicas", replicas[e])
		if _, ok := replicas[e]; !ok {
			key = spec.ScalingKey("autoscale", autoscale[e])
		}
		errs = append(errs, s.Errorf(key, "transport %q reaches the entry through one process's gateway, so its replicas would get no calls; use a network transport (%s)",
			p.Transport, strings.Join(transport.Names(), ", ")))
	}
	return errors.Join(errs...)
}

// Autoscale is a group's autoscaler: [deploy.autoscale.<group>] and the
// requests its targets are percentages of.
type Autoscale struct {
	spec.Autoscale
	// CPURequest is each process's CPU request in cores: its limit in
	// [deploy.resources], or 1 core.
	CPURequest float64
	// MemoryRequest is each process's memory limit in bytes, 0 when it
	// has none (and memory_target is then refused).
	MemoryRequest int64
}

// autoscaleOf reads group g's autoscaler, written under key, with the
// requests of its targets: the group's limits in [deploy.resources]
// (resolved before it), or 1 core and no memory limit.
func (p *Topology) autoscaleOf(s *spec.Spec, g int, key string) (*Autoscale, error) {
	res := p.Groups[g].Resources
	a := &Autoscale{Autoscale: s.Deploy.Autoscale[key], CPURequest: 1, MemoryRequest: int64(res.Memory)}
	if res.CPU > 0 {
		a.CPURequest = res.CPU
	}
	if a.MemoryTarget > 0 && a.MemoryRequest == 0 {
		return nil, s.Errorf(spec.ScalingKey("autoscale", key)+".memory_target",
			"is a percentage of each process's memory limit, and group %s has none: set %s.memory", p.Groups[g].Name, spec.ScalingKey("resources", key))
	}
	return a, nil
}

// scalingGroups maps the index of each group named under deploy.<table>
// to the key that names it.
func (p *Topology) scalingGroups(s *spec.Spec, table string, keys []string) (map[int]string, error) {
	slices.Sort(keys)
	out := map[int]string{}
	var errs []error
	for _, k := range keys {
		g := slices.IndexFunc(p.Groups, func(g Group) bool { return g.Name == k })
		if g < 0 {
			g = p.GroupOf(k)
		}
		if g < 0 {
			var names []string
			for _, grp := range p.Groups {
				names = append(names, grp.Name)
			}
			errs = append(errs, s.NameErrorf(spec.ScalingKey(table, k), "no group or component %q in placement %q (groups: %s)", k, p.Placement, strings.Join(names, ", ")))
			continue
		}
		if prev, dup := out[g]; dup {
			errs = append(errs, s.NameErrorf(spec.ScalingKey(table, k), "names group %s, which %s names already", p.Groups[g].Name, spec.ScalingKey(table, prev)))
			continue
		}
		out[g] = k
	}
	return out, errors.Join(errs...)
}

// pickerOf is the balancer policy a HostConfig names; empty is round robin.
func pickerOf(name string) (balancer.PickerBuilder, error) {
	if name == "" {
		return balancer.RoundRobin, nil
	}
	b, ok := balancer.Policies[name]
	if !ok {
		return nil, fmt.Errorf("unknown balancer %q (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(balancer.Policies)), ", "))
	}
	return b, nil
}
