package program

import (
	"fmt"
	"os"
	"strings"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/spec"
)

// joinScript runs a program inside the control group whose cgroup.procs
// files are in hostentry.CgroupProcsEnv: the shell moves itself in, then
// execs the program in its place, so that nothing the program forks starts
// outside its limits, as a Go host joins its group before it runs
// anything else.
const joinScript = `IFS=:; for f in $` + hostentry.CgroupProcsEnv + `; do echo $$ > "$f" || exit 126; done; unset IFS; exec "$@"`

// limits are the cgroup limits of component name: its group's
// deploy.resources, and the deployment's CPUs (experiment.isolation).
func limits(res spec.Resources, cpus string) cgroup.Limits {
	return cgroup.Limits{CPU: res.CPU, Memory: int64(res.Memory), CPUs: cpus}
}

// confine makes l's control group, when its limits limit anything or its
// machine confines it (machine, when not nil: the group is made inside
// the machine's, whose CPU set replaces lim's), and makes l run in it; it
// returns nil when there is nothing to limit.
func (d *deployment) confine(l *launch, lim cgroup.Limits, machine *cgroup.Group) (*cgroup.Group, error) {
	if machine != nil {
		g, err := machine.NewChild(d.id+"-"+l.name, cgroup.Limits{CPU: lim.CPU, Memory: lim.Memory})
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", l.name, err)
		}
		join(l, g)
		return g, nil
	}
	if lim == (cgroup.Limits{}) {
		return nil, nil
	}
	if d.cgroups == nil {
		m, err := cgroup.Open()
		if err != nil {
			return nil, fmt.Errorf("component %s needs a cgroup (%+v): %w", l.name, lim, err)
		}
		d.cgroups = m
	}
	g, err := d.cgroups.New(d.id+"-"+l.name, lim)
	if err != nil {
		return nil, fmt.Errorf("component %s: %w", l.name, err)
	}
	join(l, g)
	return g, nil
}

// join makes l run in g.
func join(l *launch, g *cgroup.Group) {
	l.argv = append([]string{"/bin/sh", "-c", joinScript, "sh"}, l.argv...)
	l.env = append(l.env, hostentry.CgroupProcsEnv+"="+strings.Join(g.ProcsFiles(), string(os.PathListSeparator)))
}
