// Package all registers every network transport: import it for its side
// effect where a transport is chosen by name.
//
//	import _ "github.com/svclab/svclab/internal/runtime/transport/all"
package all

import (
	_ "github.com/svclab/svclab/internal/runtime/transport/grpctransport"     // registers "grpc"
	_ "github.com/svclab/svclab/internal/runtime/transport/httptransport"     // registers "http"
	_ "github.com/svclab/svclab/internal/runtime/transport/netrpctransport"   // registers "netrpc"
	_ "github.com/svclab/svclab/internal/runtime/transport/protorpctransport" // registers "protorpc"
)
