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

// A host's resources ([deploy.hosts.<h>] cpus and memory) are a control
// group per host (package cgroup, as the local deployer's [deploy.resources]
// and experiment.isolation): its CPU set and its memory budget. Each of the
// host's processes gets a group of its own inside it (deploy.NetworkCapabilities.MachineCgroups),
// so the host's processes share its cores and its memory, and each process
// is still sampled and told out of memory by its own counters.

// onlineCPUs is the kernel's list of the CPUs that are online.
const onlineCPUs = "/sys/devices/system/cpu/online"

// checkHostResources checks cpus, memory and exclusive of every host
// before anything starts. cpus above the machine's is checked with the
// other host keys (newLayout).
func checkHostResources(s *spec.Spec, p *layout) error {
	total := 0
	for _, c := range p.cpus {
		total += c
	}
	for i, h := range p.hosts {
		host := p.spec[h]
		if host.Memory != 0 && host.Memory < spec.MinMemory {
			return s.Errorf(deploy.MachineKey(h, "memory"), "must be at least %s (no host process starts in less), e.g. \"512MiB\", got %q", spec.MinMemory, host.Memory)
		}
		if !host.Exclusive {
			continue
		}
		if p.cpus[i] == 0 {
			return s.Errorf(deploy.MachineKey(h, "exclusive"), "host %s has no cores of its own to keep: give it cpus = N", h)
		}
		if n := goruntime.NumCPU(); total > n {
			return s.Errorf(deploy.MachineKey(h, "exclusive"), "host %s's cores cannot be its own: the hosts ask for %d cores together (%s) and this machine has %d, so some must share", h, total, cpuCounts(p), n)
		}
	}
	return nil
}

func cpuCounts(p *layout) string {
	var parts []string
	for i, h := range p.hosts {
		if p.cpus[i] > 0 {
			parts = append(parts, h+" "+strconv.Itoa(p.cpus[i]))
		}
	}
	return strings.Join(parts, ", ")
}

// assignCPUs gives each host with a count its cores: consecutive runs of
// pool, in the hosts' order, so hosts are disjoint while the pool lasts
// and then wrap around to share (which checkHostResources refuses when a
// host is exclusive). A count of 0 gets none.
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
// experiment.isolation = "cpuset"), so hosts take the load generator's
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

var hostGroupSets atomic.Int64

// hostCgroups makes the group of each host that has cpus or memory; a
// host with neither gets none (nil), and its processes are the local
// deployer's as on one machine. sut is the deployment's CPU list
// (deploy.Options.CPUs): a host with a memory budget but no cpus runs
// there.
func hostCgroups(p *layout, sut string) (_ []*cgroup.Group, err error) {
	groups := make([]*cgroup.Group, len(p.hosts))
	need := false
	for i := range p.hosts {
		need = need || p.cpus[i] > 0 || p.memory[i] > 0
	}
	if !need {
		return groups, nil
	}
	m, err := cgroup.Open()
	if err != nil {
		return nil, fmt.Errorf("hosts with cpus or memory need cgroups: %w", err)
	}
	pool, err := cpuPool(sut)
	if err != nil {
		return nil, err
	}
	cpus := assignCPUs(pool, p.cpus)
	defer func() {
		if err != nil {
			err = errors.Join(err, removeHostCgroups(groups))
		}
	}()
	set := hostGroupSets.Add(1)
	for i, h := range p.hosts {
		if p.cpus[i] == 0 && p.memory[i] == 0 {
			continue
		}
		l := cgroup.Limits{Memory: int64(p.memory[i]), CPUs: sut}
		if p.cpus[i] > 0 {
			l.CPUs = cgroup.List(cpus[i])
		}
		g, err := m.New(fmt.Sprintf("netns%d-%s", set, h), l)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h, err)
		}
		groups[i] = g
	}
	return groups, nil
}

// removeHostCgroups removes the hosts' groups, once their processes are
// gone (a process still in one is killed: nothing outlives a deployment).
func removeHostCgroups(groups []*cgroup.Group) error {
	var errs []error
	for _, g := range groups {
		if g != nil {
			errs = append(errs, g.Remove())
		}
	}
	return errors.Join(errs...)
}

// Cgroup is the group of group g's host, nil when the host has neither
// cpus nor memory (deploy.NetworkCapabilities.MachineCgroups).
func (pl *placement) Cgroup(g int) *cgroup.Group {
	if pl.hostcg == nil {
		return nil
	}
	return pl.hostcg[pl.layout.hostOf[g]]
}

// HostLimits are the CPU set and memory budget of each host, in the
// spec's order; the zero Limits for a host with neither.
func (d *Deployment) HostLimits() []cgroup.Limits {
	out := make([]cgroup.Limits, len(d.layout.hosts))
	for i, g := range d.hostcg {
		if g != nil {
			out[i] = g.Limits()
		}
	}
	return out
}

// limitsText is a host's resources for svclab up's listing.
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
