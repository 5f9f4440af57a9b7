package load

import "strings"

// A target may be a server's unix socket, as unix:///path/to/server.sock
// (an absolute path), over any protocol: HTTP/1.1 and h2c requests go
// over the socket with Host: localhost, and gRPC dials it by grpc-go's
// own unix:// resolver. The exec app's programs on deploy.network =
// "unix" are driven so.

// unixScheme begins a unix socket's target.
const unixScheme = "unix://"

// unixHost is the Host of a request over a unix socket, which has none.
const unixHost = "localhost"

// UnixTarget is the target of the server on the unix socket at path.
func UnixTarget(path string) string { return unixScheme + path }

// unixSocket is the socket's path of a unix target.
func unixSocket(target string) (path string, ok bool) {
	return strings.CutPrefix(target, unixScheme)
}
