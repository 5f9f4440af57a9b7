package local

import (
	"strings"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/langhost"
	"github.com/svclab/svclab/internal/deploy/program"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Traits implements deploy.Deployer: the local deployer has no keys of its
// own, refuses the tables of deployers with hosts, checks that this
// machine has the language hosts a topology names (or the exec app's
// programs), and sweeps the programs a killed svclab left.
func (deployer) Traits() deploy.Traits {
	return deploy.Traits{CheckSpec: checkSpec, CheckMachine: checkMachine, Sweep: program.Sweep}
}

// checkMachine is Traits.CheckMachine.
func checkMachine(s *spec.Spec, topo *runtime.Topology) error {
	if program.Of(topo) != nil {
		return program.CheckMachine(s, topo)
	}
	return langhost.Check(s, topo)
}

// checkSpec is Traits.CheckSpec: the local deployer runs every group on
// this machine, so [deploy.hosts], [deploy.link] and [deploy.links] would
// be ignored without a word, and a spec copied from the netns deployer's
// example would measure one machine while its author believes it measures
// two. Resolve calls it for every design point, so a factor that varies
// deploy.deployer is checked at each of its levels.
func checkSpec(s *spec.Spec, _ *runtime.Topology) error {
	key, ok := s.FirstWritten("deploy.hosts", "deploy.link", "deploy.links")
	if !ok {
		return nil
	}
	// Errors about the table as a whole, kept beside the mistakes of
	// its keys.
	if strings.HasPrefix(key, "deploy.hosts") {
		return s.NameErrorf(key, "the %s deployer runs every group on this machine and has no hosts: set deploy.deployer = \"netns\" to emulate them (or \"kube\" to place groups on nodes), or remove [deploy.hosts]", Name)
	}
	return s.NameErrorf(key, "the %s deployer runs every group on this machine and has no links between hosts: set deploy.deployer = \"netns\" to emulate them, or remove [deploy.link] and [deploy.links]", Name)
}
