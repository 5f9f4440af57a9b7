package local

import (
	"fmt"
	"net"
	"time"

	"github.com/svclab/svclab/internal/deploy/front"
)

// The gateway of a replicated entry. Every replica of the entry group
// serves the HTTP/JSON gateway; clients reach them all through one stable
// loopback address, an HTTP front (internal/deploy/front: per request,
// round robin), which the deployer keeps on the live replicas as it keeps
// the callers' endpoint sets (pushPeers). An entry group that can only
// ever have one process gets no front: its gateway is reached directly,
// as before.

// entryGateways are the gateways of the live entry replicas.
func (d *Deployment) entryGateways() []string {
	var out []string
	for _, p := range d.live(d.topo.EntryGroup()) {
		if ep, ok := p.listen["gateway"]; ok {
			out = append(out, ep.Addr)
		}
	}
	return out
}

// startGatewayFront puts the front before the gateways when the entry
// group can have more than one replica; GatewayURL is then the front's.
func (d *Deployment) startGatewayFront() error {
	g := d.topo.Groups[d.topo.EntryGroup()]
	if g.Replicas == 1 && g.Autoscale == nil {
		return nil
	}
	dial := (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	if d.net != nil {
		if c := d.net.Capabilities().Client; c != nil {
			dial = c.DialClient // the netns deployer's client, across its link
		}
	}
	f, err := front.StartHTTP(d.entryGateways(), dial, false)
	if err != nil {
		return fmt.Errorf("deployment %s: %w", d.id, err)
	}
	d.front = f
	d.gatewayURL = "http://" + f.Addr()
	return nil
}

// pushGateway keeps the front on the live entry replicas.
func (d *Deployment) pushGateway() {
	if d.front != nil {
		d.front.Update(d.entryGateways())
	}
}

// stopGatewayFront closes the front and its connections.
func (d *Deployment) stopGatewayFront() error {
	if d.front == nil {
		return nil
	}
	return d.front.Close()
}

// gatewayAddr is where the gateway is reached: the front's address with a
// replicated entry, else the one gateway's.
func (d *Deployment) gatewayAddr() string {
	if d.front != nil {
		return d.front.Addr()
	}
	return d.gateway.Addr
}
