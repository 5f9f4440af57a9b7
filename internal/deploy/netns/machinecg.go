package netns

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// A machine's resources ([deploy.hosts.<h>] cpus and memory) are a control
// group per machine (package cgroup, as the local deployer's [deploy.resources]
// and experiment.isolation): its CPU set and its memory budget. Each of the
// machine's processes gets a group of its own inside it (deploy.NetworkCapabilities.MachineCgroups),
// so the machine's processes share its cores and its memory, and each process
// is still sampled and told out of memory by its own counters.

// onlineCPUs is the kernel's list of the CPUs that are online.
const onlineCPUs = "/sys/devices/system/cpu/online"

// checkMachineResources checks cpus, memory and exclusive of every machine
// before anything starts. cpus above the machine's is checked with the
// other machine keys (newLayout).
func checkMachineResources(s *spec.Spec, p *layout) error {
	total := 0
	for _, c := range p.cpus {
		total += c
	}
	var errs []error
	for i, h := range p.machines {
		m := p.spec[h]
		if m.Memory != 0 && m.Memory < spec.MinMemory {
			errs = append(errs, s.Errorf(deploy.MachineKey(h, "memory"), "must be at least %s (no host process starts in less), e.g. \"512MiB\", got %q", spec.MinMemory, m.Memory))
		}
		if !m.Exclusive {
			continue
		}
		if p.cpus[i] == 0 {
			errs = append(errs, s.Errorf(deploy.MachineKey(h, "exclusive"), "machine %s has no cores of its own to keep: give it cpus = N", h))
		} else if n := goruntime.NumCPU(); total > n {
			errs = append(errs, s.Errorf(deploy.MachineKey(h, "exclusive"), "machine %s's cores cannot be its own: the machines ask for %d cores together (%s) and this machine has %d, so some must share", h, total, cpuCounts(p), n))
		}
	}
	return errors.Join(errs...)
}

func cpuCounts(p *layout) string {
	var parts []string
	for i, h := range p.machines {
		if p.cpus[i] > 0 {
			parts = append(parts, h+" "+strconv.Itoa(p.cpus[i]))
		}
	}
	return strings.Join(parts, ", ")
}

// assignCPUs gives each machine with a count its cores: consecutive runs of
// pool, in the machines' order, so machines are disjoint while the pool lasts
// and then wrap around to share (which checkMachineResources refuses when a
// machine is exclusive). A count of 0 gets none.
func assignCPUs(pool []int, counts []int) [][]int {
	out := make([][]int, len(counts))
	next := 0
	for i, n := range counts {
		for range min(n, len(pool)) {
			out[i] = append(out[i], pool[next%len(pool)])
			next++
		}
		slices.Sort(out[i])
	}
	return out
}

// cpuPool orders the machine's online CPUs for assignCPUs: the system
// under test's share first (deploy.Options.CPUs under
// experiment.isolation = "cpuset"), so machines take the load generator's
// cores last and the generator keeps its own set while the SUT's lasts.
func cpuPool(sut string) ([]int, error) {
	b, err := os.ReadFile(onlineCPUs)
	if err != nil {
		return nil, fmt.Errorf("the online CPUs: %w", err)
	}
	online, err := cgroup.ParseList(string(b))
	if err != nil {
		return nil, fmt.Errorf("the online CPUs: %w", err)
	}
	first, err := cgroup.ParseList(sut)
	if err != nil {
		return nil, fmt.Errorf("the system under test's CPUs: %w", err)
	}
	pool := slices.Clone(first)
	for _, c := range online {
		if !slices.Contains(first, c) {
			pool = append(pool, c)
		}
	}
	return pool, nil
}

var machineGroupSets atomic.Int64

// machineCgroups makes the group of each machine that has cpus or memory; a
// machine with neither gets none (nil), and its processes are the local
// deployer's as on one machine. sut is the deployment's CPU list
// (deploy.Options.CPUs): a machine with a memory budget but no cpus runs
// there.
func machineCgroups(p *layout, sut string) (_ []*cgroup.Group, err error) {
	groups := make([]*cgroup.Group, len(p.machines))
	need := false
	for i := range p.machines {
		need = need || p.cpus[i] > 0 || p.memory[i] > 0
	}
	if !need {
		return groups, nil
	}
	m, err := cgroup.Open()
	if err != nil {
		return nil, fmt.Errorf("machines with cpus or memory need cgroups: %w", err)
	}
	pool, err := cpuPool(sut)
	if err != nil {
		return nil, err
	}
	cpus := assignCPUs(pool, p.cpus)
	defer func() {
		if err != nil {
			err = errors.Join(err, removeMachineCgroups(groups))
		}
	}()
	set := machineGroupSets.Add(1)
	for i, h := range p.machines {
		if p.cpus[i] == 0 && p.memory[i] == 0 {
			continue
		}
		l := cgroup.Limits{Memory: int64(p.memory[i]), CPUs: sut}
		if p.cpus[i] > 0 {
			l.CPUs = cgroup.List(cpus[i])
		}
		g, err := m.New(fmt.Sprintf("netns%d-%s", set, h), l)
		if err != nil {
			return nil, fmt.Errorf("machine %s: %w", h, err)
		}
		groups[i] = g
	}
	return groups, nil
}

// removeMachineCgroups removes the machines' groups, once their processes are
// gone (a process still in one is killed: nothing outlives a deployment).
func removeMachineCgroups(groups []*cgroup.Group) error {
	var errs []error
	for _, g := range groups {
		if g != nil {
			errs = append(errs, g.Remove())
		}
	}
	return errors.Join(errs...)
}

// Cgroup is the group of group g's machine, nil when the machine has neither
// cpus nor memory (deploy.NetworkCapabilities.MachineCgroups).
func (pl *placement) Cgroup(g int) *cgroup.Group {
	if pl.machinecg == nil {
		return nil
	}
	return pl.machinecg[pl.layout.machineOf[g]]
}

// MachineLimits are the CPU set and memory budget of each machine, in the
// spec's order; the zero Limits for a machine with neither.
func (d *Deployment) MachineLimits() []cgroup.Limits {
	out := make([]cgroup.Limits, len(d.layout.machines))
	for i, g := range d.machinecg {
		if g != nil {
			out[i] = g.Limits()
		}
	}
	return out
}

// limitsText is a machine's resources for svclab up's listing.
func limitsText(l cgroup.Limits) string {
	var parts []string
	if l.CPUs != "" {
		parts = append(parts, "CPU "+l.CPUs)
	}
	if l.Memory > 0 {
		parts = append(parts, "memory "+spec.ByteSize(l.Memory).String())
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}
