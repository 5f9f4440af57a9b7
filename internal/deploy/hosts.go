package deploy

import (
	"maps"
	"slices"

	"github.com/svclab/svclab/internal/spec"
)

// Host is one [deploy.hosts.<name>] table: a machine that a deployer
// with hosts runs groups of the placement on. The netns deployer makes
// each a network namespace of its own (and reads every key); the kube
// deployer makes each a node label its groups are selected by (and
// reads groups). The local deployer has none, and refuses the table.
type Host struct {
	// Groups names the groups of the chosen placement that run on the
	// host, each as the placement names it ("cart+checkout").
	Groups []string `toml:"groups"`
	// CPUs is how many cores the host reserves (a cpuset); 0 leaves the
	// host unconfined.
	CPUs int `toml:"cpus"`
	// Memory is the host's memory budget; 0 for none.
	Memory spec.ByteSize `toml:"memory"`
	// Exclusive keeps the host's cores its own: no other host's CPU set
	// may overlap it (cpuset.cpu_exclusive's meaning).
	Exclusive bool `toml:"exclusive"`
}

// HostsOf decodes [deploy.hosts]. Resolve decodes it for every spec, as
// two deployers read it; what each host's keys mean is the reader's to
// check against the topology.
func HostsOf(s *spec.Spec) (map[string]Host, error) {
	var hosts map[string]Host
	if err := s.Decode("deploy.hosts", &hosts); err != nil {
		return nil, err
	}
	return hosts, nil
}

// HostNames are the names of hosts in file order (of their groups key),
// so that the first mistake reported is the first written.
func HostNames(s *spec.Spec, hosts map[string]Host) []string {
	return slices.SortedFunc(maps.Keys(hosts), func(a, b string) int {
		return s.Line(HostKey(a, "groups")) - s.Line(HostKey(b, "groups"))
	})
}

// HostKey is the spec key of a host table's key, or with key "" the
// table's.
func HostKey(host, key string) string {
	if key == "" {
		return spec.KeyOf("deploy", "hosts", host)
	}
	return spec.KeyOf("deploy", "hosts", host, key)
}
