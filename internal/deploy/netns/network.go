package netns

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The emulated network of one deployment: a router namespace holding a
// bridge, and one namespace per machine plus one for the client, each joined
// to the bridge by a veth pair. Every deployment has namespaces of its
// own, so all use the same subnet without meeting.
const (
	bridgeName = "br0"
	// ifName is each endpoint's side of its veth, inside its namespace.
	ifName = "eth0"
	// subnet's .1 is the router (where link proxies listen), .2 the
	// client, .3 upward the hosts.
	subnetPrefix = "10.77.0."
	subnetBits   = 24
	routerIP     = subnetPrefix + "1"
	// maxEndpoints keeps every address inside the /24.
	maxEndpoints = 250
)

// endpoint is a namespace on the bridge: the client or a host.
type endpoint struct {
	name string // the machine's name in the spec, or "client"
	ns   netns.NsHandle
	ip   string
	// veth is the router side of its veth pair (egress: toward the
	// endpoint).
	veth string
}

// network is one deployment's namespaces.
type network struct {
	names    nsNames
	router   netns.NsHandle
	client   *endpoint
	machines []*endpoint
	// created lists every named namespace made, for teardown.
	created []string
}

// buildNetwork makes the router, the client and one namespace per host.
// On error it removes what it made.
func buildNetwork(machines []string) (_ *network, err error) {
	if len(machines)+1 > maxEndpoints {
		return nil, fmt.Errorf("%d machines: at most %d", len(machines), maxEndpoints-1)
	}
	n := &network{names: newNames(), router: netns.None()}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	if n.router, err = n.newNS(n.names.router()); err != nil {
		return nil, err
	}
	rh, err := netlink.NewHandleAt(n.router)
	if err != nil {
		return nil, fmt.Errorf("netlink in router namespace: %w", err)
	}
	defer rh.Close()
	if err := linkUp(rh, "lo"); err != nil {
		return nil, err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName}}
	if err := rh.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("add bridge: %w", err)
	}
	if err := addAddr(rh, bridgeName, routerIP); err != nil {
		return nil, err
	}
	if err := linkUp(rh, bridgeName); err != nil {
		return nil, err
	}
	add := func(name, nsName string, idx int) (*endpoint, error) {
		ns, err := n.newNS(nsName)
		if err != nil {
			return nil, err
		}
		ep := &endpoint{name: name, ns: ns, ip: fmt.Sprintf("%s%d", subnetPrefix, idx+2), veth: fmt.Sprintf("v%d", idx)}
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: ep.veth, MasterIndex: 0},
			PeerName:      ifName,
			PeerNamespace: netlink.NsFd(int(ns)),
		}
		if err := rh.LinkAdd(veth); err != nil {
			return nil, fmt.Errorf("add veth for %s: %w", name, err)
		}
		l, err := rh.LinkByName(ep.veth)
		if err != nil {
			return nil, fmt.Errorf("veth for %s: %w", name, err)
		}
		brl, err := rh.LinkByName(bridgeName)
		if err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
		if err := rh.LinkSetMaster(l, brl); err != nil {
			return nil, fmt.Errorf("attach veth of %s to the bridge: %w", name, err)
		}
		if err := linkUp(rh, ep.veth); err != nil {
			return nil, err
		}
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			return nil, fmt.Errorf("netlink in %s's namespace: %w", name, err)
		}
		defer h.Close()
		for _, step := range []func() error{
			func() error { return linkUp(h, "lo") },
			func() error { return addAddr(h, ifName, ep.ip) },
			func() error { return linkUp(h, ifName) },
		} {
			if err := step(); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		return ep, nil
	}
	if n.client, err = add("client", n.names.client(), 0); err != nil {
		return nil, err
	}
	for i, h := range machines {
		ep, err := add(h, n.names.host(i), i+1)
		if err != nil {
			return nil, err
		}
		n.machines = append(n.machines, ep)
	}
	return n, nil
}

func (n *network) newNS(name string) (netns.NsHandle, error) {
	h, err := newNamed(name)
	if err != nil {
		return h, err
	}
	n.created = append(n.created, name)
	return h, nil
}

// close deletes every namespace of the network, and with them their veths,
// the bridge and the queueing disciplines. Processes must have left them.
func (n *network) close() error {
	var errs []error
	for _, ep := range append([]*endpoint{n.client}, n.machines...) {
		if ep != nil {
			ep.ns.Close()
		}
	}
	if n.router.IsOpen() {
		n.router.Close()
	}
	for _, name := range n.created {
		if err := netns.DeleteNamed(name); err != nil {
			errs = append(errs, fmt.Errorf("delete network namespace %s: %w", name, err))
		}
	}
	n.created = nil
	return errors.Join(errs...)
}

func linkUp(h *netlink.Handle, name string) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up: %w", name, err)
	}
	return nil
}

func addAddr(h *netlink.Handle, link, ip string) error {
	l, err := h.LinkByName(link)
	if err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(ip), Mask: net.CIDRMask(subnetBits, 32)}}
	if err := h.AddrAdd(l, a); err != nil {
		return fmt.Errorf("address %s on %s: %w", ip, link, err)
	}
	return nil
}
