package local

import (
	"fmt"
	"os"
	"strings"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/spec"
)

// NewProcessCgroup makes the control group of one new process of group
// (a group of the topology): name must be unique within the deployment (the
// group's name, or a replica's), and the limits are the group's
// (deploy.resources) with the deployment's CPUs (deploy.Options.CPUs). It
// returns nil and no environment when there is nothing to limit. env is to
// be added to the process's environment; the caller moves the process in
// with Group.Add once it has started and removes the group when the
// process is gone.
//
// When the deployment's Network confines its machines
// (deploy.MachineCgroups), the process's group is made inside its
// machine's, whose CPU set replaces the deployment's.
func (d *Deployment) NewProcessCgroup(name, group string) (g *cgroup.Group, env []string, err error) {
	res, cpus := d.groupResources(group), d.cpus
	if m := d.machineCgroup(group); m != nil {
		if g, err = m.NewChild(d.id+"-"+name, cgroup.Limits{CPU: res.CPU, Memory: int64(res.Memory)}); err != nil {
			return nil, nil, fmt.Errorf("process %s: %w", name, err)
		}
		return g, []string{hostentry.CgroupProcsEnv + "=" + strings.Join(g.ProcsFiles(), string(os.PathListSeparator))}, nil
	}
	if res.IsZero() && cpus == "" {
		return nil, nil, nil
	}
	m, err := cgroup.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("process %s needs a cgroup (cpu %g, memory %s, cpus %q): %w", name, res.CPU, res.Memory, cpus, err)
	}
	g, err = m.New(d.id+"-"+name, cgroup.Limits{CPU: res.CPU, Memory: int64(res.Memory), CPUs: cpus})
	if err != nil {
		return nil, nil, err
	}
	return g, []string{hostentry.CgroupProcsEnv + "=" + strings.Join(g.ProcsFiles(), string(os.PathListSeparator))}, nil
}

// machineCgroup is the group of group's machine, when the Network has
// machines that confine their processes.
func (d *Deployment) machineCgroup(group string) *cgroup.Group {
	if d.net == nil {
		return nil
	}
	hc := d.net.Capabilities().MachineCgroups
	if hc == nil {
		return nil
	}
	for i, g := range d.topo.Groups {
		if g.Name == group {
			return hc.Cgroup(i)
		}
	}
	return nil
}

// groupResources are the limits of the topology's group named group.
func (d *Deployment) groupResources(group string) spec.Resources {
	for _, g := range d.topo.Groups {
		if g.Name == group {
			return g.Resources
		}
	}
	return spec.Resources{}
}

// outOfMemory reports whether the OOM killer ended a process of g.
func outOfMemory(g *cgroup.Group) bool {
	if g == nil {
		return false
	}
	st, err := g.Stats()
	return err == nil && st.OOMKills > 0
}
