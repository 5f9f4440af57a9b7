package netns

import (
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// shaper limits links' bandwidth with htb on the veth of the endpoint that
// opens the connections (the caller): each shaped pair is an htb class of
// the link's rate, in both directions, and each proxy of the pair a u32
// filter matching the proxy's port (the destination port of what the
// caller sends, the source port of what it receives). Traffic no filter
// matches leaves unshaped (htb's direct queue).
type shaper struct {
	mu      sync.Mutex
	roots   map[string]bool   // "ns/link" with an htb root
	classes map[string]uint16 // "from-to" → class minor
	next    uint16            // next class minor
	handles map[netns.NsHandle]*netlink.Handle
}

func newShaper() *shaper {
	return &shaper{roots: map[string]bool{}, classes: map[string]uint16{}, next: 1, handles: map[netns.NsHandle]*netlink.Handle{}}
}

func (s *shaper) close() {
	for _, h := range s.handles {
		h.Close()
	}
	s.handles = nil
}

func (s *shaper) handle(ns netns.NsHandle) (*netlink.Handle, error) {
	if h, ok := s.handles[ns]; ok {
		return h, nil
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	s.handles[ns] = h
	return h, nil
}

// limit shapes the traffic of proxy port between caller from and the
// proxy to bps bits per second each way, sharing the class of pair.
func (s *shaper) limit(router netns.NsHandle, from *endpoint, pair string, bps uint64, port int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	minor, ok := s.classes[pair]
	if !ok {
		minor = s.next
		s.next++
		s.classes[pair] = minor
	}
	for _, side := range []struct {
		ns    netns.NsHandle
		link  string
		match netlink.TcU32Key
	}{
		// What the caller sends: destination port, on its own side.
		{from.ns, ifName, netlink.TcU32Key{Mask: 0x0000ffff, Val: uint32(port), Off: 20}},
		// What it receives: source port, on the router's side.
		{router, from.veth, netlink.TcU32Key{Mask: 0xffff0000, Val: uint32(port) << 16, Off: 20}},
	} {
		h, err := s.handle(side.ns)
		if err != nil {
			return err
		}
		l, err := h.LinkByName(side.link)
		if err != nil {
			return fmt.Errorf("link %s of %s: %w", side.link, from.name, err)
		}
		idx := l.Attrs().Index
		key := fmt.Sprintf("%d/%s", side.ns, side.link)
		if !s.roots[key] {
			q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
			if err := h.QdiscAdd(q); err != nil {
				return fmt.Errorf("htb on %s of %s: %w", side.link, from.name, err)
			}
			s.roots[key] = true
		}
		if !ok {
			c := netlink.NewHtbClass(
				netlink.ClassAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(1, 0), Handle: netlink.MakeHandle(1, minor)},
				netlink.HtbClassAttrs{Rate: bps, Ceil: bps},
			)
			if err := h.ClassAdd(c); err != nil {
				return fmt.Errorf("htb class for %s on %s of %s: %w", pair, side.link, from.name, err)
			}
		}
		f := &netlink.U32{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(1, 0), Priority: 1, Protocol: unix.ETH_P_IP},
			ClassId:     netlink.MakeHandle(1, minor),
			Sel: &netlink.TcU32Sel{
				Flags: nl.TC_U32_TERMINAL,
				Keys: []netlink.TcU32Key{
					// TCP (the protocol byte of the IP header)...
					{Mask: 0x00ff0000, Val: unix.IPPROTO_TCP << 16, Off: 8},
					// ...and the port, after a 20-byte IP header.
					side.match,
				},
			},
		}
		if err := h.FilterAdd(f); err != nil {
			return fmt.Errorf("u32 filter for port %d on %s of %s: %w", port, side.link, from.name, err)
		}
	}
	return nil
}
