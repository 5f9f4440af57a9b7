package program

import (
	"net"
	"time"

	"github.com/svclab/svclab/internal/deploy/front"
)

// balancingFront is the one address before a component's replicas.
type balancingFront interface {
	Update(addrs []string)
	Addr() string
	Close() error
}

// startFront starts the front before replicas that speak protocol: per
// request for HTTP, h2c and gRPC (which it reaches over h2c), per
// connection for raw TCP.
func startFront(protocol string, replicas []string) (balancingFront, error) {
	dial := (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	switch protocol {
	case ProtoTCP:
		return front.StartTCP(replicas, dial)
	case ProtoHTTP:
		return front.StartHTTP(replicas, dial, false)
	}
	return front.StartHTTP(replicas, dial, true)
}

// updateFront keeps what balances over component name's replicas on its
// live ones: its front, if it has one (before the replicas, or with
// sidecars before their ingress listeners), and with sidecars its callers'
// proxies. Once the deployment stops, nothing changes.
func (d *deployment) updateFront(name string) {
	select {
	case <-d.stopCh:
		return
	default:
	}
	var live []string
	for _, p := range d.live(name) {
		live = append(live, p.addr)
	}
	if d.mesh != nil {
		if err := d.setUpstreams(name, live); err != nil {
			d.logf("%v", err)
		}
		live = d.mesh.ingresses(live)
	}
	if f := d.fronts[name]; f != nil {
		f.Update(live)
	}
}
