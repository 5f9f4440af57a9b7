package netns

import (
	"fmt"

	"github.com/svclab/svclab/internal/deploy"
)

// Kill kills a process through the local deployer that started it
// (deploy.Killer): a process on an emulated host is a local child like any
// other.
func (d *Deployment) Kill(group, replica int) (deploy.ProcessInfo, error) {
	k, ok := d.Deployment.(deploy.Killer)
	if !ok {
		return deploy.ProcessInfo{}, fmt.Errorf("deployer %s: its host deployer cannot kill a process", Name)
	}
	return k.Kill(group, replica)
}
