package spec

import (
	"errors"
	"math"
	"slices"
)

// Resources is one [deploy.resources.<group or component>] table: the
// limits of every process of that group. A key left out sets no limit.
type Resources struct {
	// CPU is a number of cores (a CFS quota), e.g. 0.5.
	CPU float64 `toml:"cpu" json:"cpu,omitempty"`
	// Memory is a hard limit: past it the OOM killer ends the process.
	Memory ByteSize `toml:"memory" json:"memory,omitempty"`
}

// IsZero reports whether r limits nothing.
func (r Resources) IsZero() bool { return r.CPU == 0 && r.Memory == 0 }

// The values of experiment.isolation.
const (
	// IsolationCPUSet runs the load generator and the system under test
	// on disjoint CPU sets (cgroup cpusets).
	IsolationCPUSet = "cpuset"
	// IsolationNone lets them share every CPU.
	IsolationNone = "none"
)

// Isolations lists the values of experiment.isolation, the default first.
var Isolations = []string{IsolationCPUSet, IsolationNone}

// MinCPU is the smallest CPU limit: the kernel's smallest CFS quota, 1 ms,
// over svclab's 100 ms period.
const MinCPU = 0.01

// MinMemory is the smallest memory limit: below it no host process starts,
// and every run would end as "out of memory" rather than as an error here.
const MinMemory ByteSize = 8 << 20

// checkResources checks [deploy.resources]: every cpu at least MinCPU
// cores, every memory at least MinMemory. What this machine can give is
// the deployer's to check (deploy.Resolve, for a deployer that runs
// here); whether each name is a group or component is the topology's.
func (s *Spec) checkResources() error {
	var errs []error
	for _, name := range s.resourceNames() {
		r := s.Deploy.Resources[name]
		key := "deploy.resources." + name
		if s.written(key+".cpu") && (r.CPU < MinCPU || math.IsNaN(r.CPU)) {
			errs = append(errs, s.Errorf(key+".cpu", "must be a number of cores from %g, got %g", MinCPU, r.CPU))
		}
		if s.written(key+".memory") && r.Memory < MinMemory {
			errs = append(errs, s.Errorf(key+".memory", "must be a size from %s, e.g. \"512MiB\", got %q", MinMemory, r.Memory))
		}
	}
	return errors.Join(errs...)
}

// resourceNames are the names of [deploy.resources], in file order.
func (s *Spec) resourceNames() []string {
	names := make([]string, 0, len(s.Deploy.Resources))
	for n := range s.Deploy.Resources {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return s.Line("deploy.resources."+a) - s.Line("deploy.resources."+b)
	})
	return names
}

// checkIsolation checks experiment.isolation; empty (left out) means
// "cpuset where cgroups allow it", which the runner decides.
func (s *Spec) checkIsolation(v string) error {
	if v != "" && !slices.Contains(Isolations, v) || v == "" && s.written("experiment.isolation") {
		return s.Errorf("experiment.isolation", "must be %q or %q, got %q (leave the key out for %q where cgroups allow it)", IsolationCPUSet, IsolationNone, v, IsolationCPUSet)
	}
	return nil
}
