package deploy

import (
	"maps"
	"slices"

	"github.com/svclab/svclab/internal/spec"
)

// Machine is one [deploy.hosts.<name>] table: an emulated machine that a
// deployer with machines runs groups of the placement on (the spec key
// keeps its name; "host" in code is a svclab host process). The netns deployer makes
// each a network namespace of its own (and reads every key); the kube
// deployer makes each a node label its groups are selected by (and
// reads groups). The local deployer has none, and refuses the table.
type Machine struct {
	// Groups names the groups of the chosen placement that run on the
	// machine, each as the placement names it ("cart+checkout").
	Groups []string `toml:"groups"`
	// CPUs is how many cores the machine reserves (a cpuset); 0 leaves
	// the machine unconfined.
	CPUs int `toml:"cpus"`
	// Memory is the machine's memory budget; 0 for none.
	Memory spec.ByteSize `toml:"memory"`
	// Exclusive keeps the machine's cores its own: no other machine's CPU set
	// may overlap it (cpuset.cpu_exclusive's meaning).
	Exclusive bool `toml:"exclusive"`
}

// MachinesOf decodes [deploy.hosts]. Resolve decodes it for every spec, as
// two deployers read it; what each machine's keys mean is the reader's to
// check against the topology. With an error, it returns the machines as
// far as they decoded (spec.Spec.Decode leaves the wrong keys out), for a
// reader that reports its own mistakes beside these.
func MachinesOf(s *spec.Spec) (map[string]Machine, error) {
	var machines map[string]Machine
	err := s.Decode("deploy.hosts", &machines)
	return machines, err
}

// MachineNames are the names of machines in file order (of their groups key),
// so that the first mistake reported is the first written.
func MachineNames(s *spec.Spec, machines map[string]Machine) []string {
	return slices.SortedFunc(maps.Keys(machines), func(a, b string) int {
		return s.Line(MachineKey(a, "groups")) - s.Line(MachineKey(b, "groups"))
	})
}

// MachineKey is the spec key of a machine table's key, or with key "" the
// table's.
func MachineKey(machine, key string) string {
	if key == "" {
		return spec.KeyOf("deploy", "hosts", machine)
	}
	return spec.KeyOf("deploy", "hosts", machine, key)
}
