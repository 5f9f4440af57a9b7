package netns

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/svclab/svclab/internal/deploy/hopfault"
	"github.com/svclab/svclab/internal/runtime"
)

// Faults on the hops into a group ([deploy.faults]: link_cut, reset,
// latency_spike) act on this package's proxies: every path into a group a
// hop fault targets carries one, even over an unshaped link or between
// two groups of one machine, where a path otherwise has none. A shaped link's
// proxy carries the link's toxics and, during a window, the fault's after
// them. Paths into groups no fault targets stay as they were, so faults
// cost nothing where none is asked for.

// hopFaults are the proxies into targeted groups and the faults acting.
type hopFaults struct {
	mu sync.Mutex
	// byGroup lists each targeted group's proxies, in creation order.
	byGroup map[int][]*toxiproxy.Proxy
	// active are the windows under way, so that a proxy made during one
	// (a replica added, a peer set pushed again) gets its toxics too.
	active []*activeFault
}

type activeFault struct {
	f     runtime.Fault
	stops []func() error
}

// faulted reports whether a hop fault targets group g (-1, the client,
// never: faults act on the hops between groups).
func (d *Deployment) faulted(g int) bool {
	if g < 0 {
		return false
	}
	return slices.ContainsFunc(d.topo.Faults, func(f runtime.Fault) bool { return f.Link() && f.Group == g })
}

// addFaultHop records p as a path into group g, and puts on it the
// faults on g now acting.
func (d *Deployment) addFaultHop(g int, p *toxiproxy.Proxy) error {
	d.faults.mu.Lock()
	defer d.faults.mu.Unlock()
	if d.faults.byGroup == nil {
		d.faults.byGroup = map[int][]*toxiproxy.Proxy{}
	}
	d.faults.byGroup[g] = append(d.faults.byGroup[g], p)
	for _, a := range d.faults.active {
		if a.f.Group != g {
			continue
		}
		stop, err := hopfault.Start(a.f, []*toxiproxy.Proxy{p})
		if err != nil {
			return err
		}
		a.stops = append(a.stops, stop)
	}
	return nil
}

// StartFault makes f act on every path into f.Group (deploy.Capabilities.HopFaults),
// until stop.
func (d *Deployment) StartFault(f runtime.Fault) (stop func() error, err error) {
	d.faults.mu.Lock()
	defer d.faults.mu.Unlock()
	proxies := d.faults.byGroup[f.Group]
	if len(proxies) == 0 { // runtime.Resolve refuses a hop no group calls
		return nil, fmt.Errorf("deploy.faults.%s: no proxy on the hop into group %s", f.Kind, d.topo.Groups[f.Group].Name)
	}
	first, err := hopfault.Start(f, proxies)
	if err != nil {
		return nil, err
	}
	a := &activeFault{f: f, stops: []func() error{first}}
	d.faults.active = append(d.faults.active, a)
	var once sync.Once
	return func() error {
		var errs []error
		once.Do(func() {
			d.faults.mu.Lock()
			defer d.faults.mu.Unlock()
			d.faults.active = slices.DeleteFunc(d.faults.active, func(b *activeFault) bool { return b == a })
			for _, s := range a.stops {
				errs = append(errs, s())
			}
		})
		return errors.Join(errs...)
	}, nil
}
