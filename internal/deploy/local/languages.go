package local

import (
	"os/exec"

	"github.com/svclab/svclab/internal/deploy"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Hosts in Java and Python (deploy.languages, internal/deploy/langhost)
// run one component each, from the same HostConfig as `svclab host`, and
// bind their listeners by address (sockets.byAddress, held until the
// host starts);
// they are otherwise started, watched and stopped as a Go host is.

// langCommand makes cmd run the host of hc's group in its language, when
// that is not Go.
func (d *Deployment) langCommand(cmd *exec.Cmd, hc *hostv1.HostConfig) {
	if len(hc.Components) != 1 {
		return
	}
	argv := d.langs[d.topo.Language(hc.Components[0])]
	if argv == nil {
		return
	}
	cmd.Path, cmd.Args = argv[0], argv
}

// langHost reports whether p runs a Java or Python host (not the proxy
// beside one, which names the same component).
func (d *Deployment) langHost(p *process) bool {
	return p.info.Role == deploy.RoleHost && len(p.info.Components) == 1 && d.langs[d.topo.Language(p.info.Components[0])] != nil
}
