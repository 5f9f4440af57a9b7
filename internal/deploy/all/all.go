// Package all registers every deployer: import it for its side effect where
// a deployer is chosen by name.
//
//	import _ "github.com/svclab/svclab/internal/deploy/all"
package all

import (
	_ "github.com/svclab/svclab/internal/deploy/external" // registers "external"
	_ "github.com/svclab/svclab/internal/deploy/kube"     // registers "kube"
	_ "github.com/svclab/svclab/internal/deploy/local"    // registers "local"
	_ "github.com/svclab/svclab/internal/deploy/netns"    // registers "netns"
)
