// Package all registers every reference app: import it for its side effect
// where an app is chosen by name (app.name in a spec).
//
//	import _ "github.com/svclab/svclab/apps/all"
package all

import (
	_ "github.com/svclab/svclab/apps/boutique" // registers "boutique"
	_ "github.com/svclab/svclab/apps/chain"    // registers "chain"
	_ "github.com/svclab/svclab/apps/rpcops"   // registers "rpcops"
	_ "github.com/svclab/svclab/apps/select"   // registers "select"
	_ "github.com/svclab/svclab/apps/shop"     // registers "shop"
	_ "github.com/svclab/svclab/apps/synth"    // registers "synth"
)
