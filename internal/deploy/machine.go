package deploy

import (
	"errors"
	"maps"
	goruntime "runtime"
	"slices"

	"github.com/dustin/go-humanize"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// machineMemory is this machine's physical memory, or 0 where it cannot
// be read.
var machineMemory = physicalMemory()

// fallbackMaxReplicas bounds a group's processes where this machine's
// memory cannot be read: 4096 processes of spec.MinMemory each are 32 GiB.
const fallbackMaxReplicas = 4096

// MaxReplicas is the most processes one group may have on this machine:
// every replica is a process of its own that needs spec.MinMemory (8 MiB)
// to start, so the machine's memory holds at most memory / MinMemory of
// them (2,944 on a 23 GiB machine). A count past it would not fail at the
// plan but at the run, after minutes of starting processes, or take the
// machine's memory from the processes already measured.
func MaxReplicas() int {
	if machineMemory <= 0 {
		return fallbackMaxReplicas
	}
	return int(machineMemory / spec.MinMemory)
}

// checkMachineSizes checks the sizes a spec asks of a deployer that runs
// everything here against this machine: each process's CPU limit against
// its cores, its memory limit against its memory, and each group's
// replicas and autoscaler maximum against MaxReplicas. The kube deployer
// is Remote, and its cluster's nodes bound it instead.
func checkMachineSizes(s *spec.Spec, _ *runtime.Topology) error {
	d := s.Deploy
	var errs []error
	cores := float64(goruntime.NumCPU())
	for _, name := range slices.Sorted(maps.Keys(d.Resources)) {
		r, key := d.Resources[name], spec.ScalingKey("resources", name)
		if r.CPU > cores {
			errs = append(errs, s.Errorf(key+".cpu", "must be a number of cores from %g to this machine's %g, got %g", spec.MinCPU, cores, r.CPU))
		}
		if machineMemory > 0 && r.Memory > machineMemory {
			errs = append(errs, s.Errorf(key+".memory", "must be a size from %s to this machine's %s, e.g. \"512MiB\", got %q", spec.MinMemory, humanize.IBytes(uint64(machineMemory)), r.Memory))
		}
	}
	most := MaxReplicas()
	for _, name := range slices.Sorted(maps.Keys(d.Replicas)) {
		if n := d.Replicas[name]; n > most {
			errs = append(errs, s.Errorf(spec.ScalingKey("replicas", name), "must be at most %d processes, got %d: %s", most, n, replicaBound()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Autoscale)) {
		if n := d.Autoscale[name].Max; n > most {
			errs = append(errs, s.Errorf(spec.ScalingKey("autoscale", name)+".max", "must be at most %d processes, got %d: %s", most, n, replicaBound()))
		}
	}
	return errors.Join(errs...)
}

// replicaBound says why MaxReplicas is what it is.
func replicaBound() string {
	if machineMemory <= 0 {
		return "this machine's memory cannot be read, and each replica is a process of its own"
	}
	return "each replica is a process that needs " + spec.MinMemory.String() + " to start, and this machine has " + humanize.IBytes(uint64(machineMemory))
}
