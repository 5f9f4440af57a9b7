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

// updateFront keeps the front of component name, if it has one, on its
// live replicas.
func (d *deployment) updateFront(name string) {
	f := d.fronts[name]
	if f == nil {
		return
	}
	d.mu.Lock()
	var live []string
	for _, p := range d.procs {
		if p.component == name && !p.exited() {
			live = append(live, p.addr)
		}
	}
	d.mu.Unlock()
	f.Update(live)
}
