package deploy

import (
	"context"
	"net"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/runtime"
)

// Network places the processes of a deployment that a deployer starts on
// this machine: where each group's listeners are bound, where its process
// runs, and what address a group dials to reach another's listener. The
// local deployer uses it when Options.Network is set, which is how the
// netns deployer runs each host in a network namespace of its own while
// reusing the local deployer's child processes, health checks and control
// channel.
type Network interface {
	// Listen binds a TCP listener for group g's component or gateway.
	Listen(group int) (net.Listener, error)
	// Peer is the endpoint group from dials to reach ep, a listener of
	// group to (a proxy standing for an emulated link, say).
	Peer(from, to int, ep runtime.Endpoint) (runtime.Endpoint, error)
	// Enter moves the calling goroutine, which is locked to its OS thread,
	// to where group g's process must start (children inherit the
	// thread's network namespace); leave moves it back.
	Enter(group int) (leave func() error, err error)
	// Dial opens a connection from the deployer to a listener, for its
	// health checks.
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
	// Capabilities says what else the network does; nil fields for none.
	Capabilities() NetworkCapabilities
}

// NetworkCapabilities are what a Network can do beyond Network, nil where
// it cannot, as Capabilities are for a Deployment.
type NetworkCapabilities struct {
	// MachineCgroups confines each machine's processes.
	MachineCgroups MachineCgroups
	// Client places the load generator on a host of its own.
	Client ClientNetwork
}

// MachineCgroups is a Network whose machines ([deploy.hosts]) confine
// their processes: the deployer makes each process's control group inside
// the one Cgroup names for its group (a machine's CPU set and memory
// budget, shared by the machine's processes), in place of the
// deployment's CPUs.
type MachineCgroups interface {
	// Cgroup is the group of group g's machine, or nil for none.
	Cgroup(g int) *cgroup.Group
}

// ClientNetwork is a Network whose load generator sits on a host of its
// own: the deployer's front over a replicated entry's gateways dials them
// as the client would, across the client's link.
type ClientNetwork interface {
	// DialClient opens a connection from the client to addr, a listener
	// of a group's process.
	DialClient(ctx context.Context, network, addr string) (net.Conn, error)
}
