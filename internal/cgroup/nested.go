package cgroup

import "fmt"

// NewChild makes a group named name inside g, with limits l on top of g's:
// the kernel holds the child's processes to both, so the child shares g's
// memory budget and CPU set with g's other children (an emulated host's
// processes share the host's). A CPU set or memory limit l leaves out is
// g's, and is recorded in the child's Limits, as those are what bind its
// processes. The child is known to the manager as "<g's name>/<name>";
// removing g removes it too.
func (g *Group) NewChild(name string, l Limits) (*Group, error) {
	if err := checkNew(name, l); err != nil {
		return nil, err
	}
	if l.CPUs == "" {
		// A v1 cpuset child must name its CPUs before it takes processes;
		// g's are the ones it may have.
		l.CPUs = g.lim.CPUs
	}
	if g.lim.Memory > 0 && (l.Memory == 0 || l.Memory > g.lim.Memory) {
		l.Memory = g.lim.Memory
	}
	c, err := g.m.create(g.name+"/"+name, g.path+"/"+dirName(name), l)
	if err != nil {
		return nil, fmt.Errorf("in cgroup %s: %w", g.path, err)
	}
	return c, nil
}
