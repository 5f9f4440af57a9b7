// Command svclab-host is the lean host binary: it runs one group of a
// deployment, as `svclab host` does, and links only what a host runs
// (every reference app, transport and middleware), not the rest of
// svclab (the CLI, the deployers, the Kubernetes client, the analysis,
// the load generator). `make build` puts it beside bin/svclab, where the
// local and netns deployers start it for their hosts, and `svclab image`
// beside /svclab in the kube deployer's image, where `svclab host` hands
// over to it (internal/deploy/hostentry, Command and ExecLean). A host of
// it holds less than half the memory of a `svclab host`
// (docs/PERFORMANCE.md, "Synth topologies at scale").
package main

import (
	_ "github.com/svclab/svclab/apps/all" // every app a host may run
	"github.com/svclab/svclab/internal/deploy/hostentry"
	_ "github.com/svclab/svclab/internal/runtime/transport/all" // every transport
)

func main() { hostentry.Main() }
