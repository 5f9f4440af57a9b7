package netns

import (
	"context"
	"fmt"
	"net"

	"github.com/svclab/svclab/internal/runtime"
)

// A replicated entry (deploy.replicas or deploy.autoscale on the entry's
// group) is reached as the local deployer reaches it: the client's
// connection is its balancer over the live replicas, and the gateway is its
// front over their gateways, both kept current as replicas come and go.
// Both dial through DialClient, so each request crosses the client's link
// to whichever replica it goes to.

// replicatedEntry reports whether the entry's group can have more than one
// process.
func (d *Deployment) replicatedEntry() bool {
	g := d.topo.Groups[d.topo.EntryGroup()]
	return g.Replicas != 1 || g.Autoscale != nil
}

// DialClient opens a connection from the client's namespace to addr, a
// listener on one of the machines, through the client's link to that machine
// (deploy.NetworkCapabilities.Client).
func (pl *placement) DialClient(ctx context.Context, network, addr string) (net.Conn, error) {
	d := pl.d()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("client dial %s: %w", addr, err)
	}
	for i, h := range d.net.machines {
		if h.ip != host {
			continue
		}
		ep, err := d.path(d.net.client, i, -1, runtime.Endpoint{Network: network, Addr: addr})
		if err != nil {
			return nil, fmt.Errorf("client dial %s: %w", addr, err)
		}
		return dialIn(ctx, d.net.client.ns, network, ep.Addr)
	}
	return nil, fmt.Errorf("client dial %s: no emulated machine has that address", addr)
}
