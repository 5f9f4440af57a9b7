package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/svclab/svclab/internal/deploy/langhost"
	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// sockets holds the listening sockets the deployer bound for one replica
// of one group.
type sockets struct {
	group, ordinal int
	listen         map[string]*hostv1.Listener // component → listener
	gateway        *hostv1.Listener            // in the entry group
	control        *hostv1.Listener            // its host's control service
	metrics        *hostv1.Listener            // with deploy.metrics (mesh.go)
	files          []*os.File                  // inherited files, fd 3 upward
	closers        []io.Closer
	// held keep the ports of a host that binds its own listeners until
	// it starts (release).
	held []io.Closer
}

func (s *sockets) close() {
	s.release()
	for _, c := range s.closers {
		_ = c.Close()
	}
	s.closers = nil
}

// byAddress gives ep, a listener of a Java or Python host, an address
// (langhost.Listener), whose port s holds until release.
func (s *sockets) byAddress(ep runtime.Endpoint) (*hostv1.Listener, error) {
	l, hold, err := langhost.Listener(ep)
	if hold != nil {
		s.held = append(s.held, hold)
	}
	return l, err
}

// release frees the ports held for the host, just before it starts and
// binds them.
func (s *sockets) release() {
	for _, h := range s.held {
		_ = h.Close()
	}
	s.held = nil
}

// closeAll closes the deployer's copies of many replicas' sockets.
func closeAll(ss []*sockets) {
	for _, s := range ss {
		s.close()
	}
}

// inherit makes lis, bound for ep, a socket the replica's host inherits.
func (s *sockets) inherit(lis net.Listener, ep runtime.Endpoint) (*hostv1.Listener, error) {
	s.closers = append(s.closers, lis)
	f, err := lis.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		return nil, fmt.Errorf("listener file for %s: %w", ep, err)
	}
	s.closers = append(s.closers, f)
	s.files = append(s.files, f)
	ep.Addr = lis.Addr().String()
	// ExtraFiles[i] becomes fd 3+i in the child.
	return &hostv1.Listener{Endpoint: ep.Proto(), Fd: int32(2 + len(s.files))}, nil
}

// sockName is the unix socket path of component c in replica ordinal; the
// first replica keeps the plain name.
func (d *Deployment) sockName(c string, ordinal int) string {
	if ordinal == 0 {
		return filepath.Join(d.dir, c+".sock")
	}
	return filepath.Join(d.dir, c+"-"+strconv.Itoa(ordinal)+".sock")
}

// bind creates every listener of replica ordinal of group g.
func (d *Deployment) bind(g, ordinal int) (_ *sockets, err error) {
	p := d.topo
	s := &sockets{group: g, ordinal: ordinal, listen: map[string]*hostv1.Listener{}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	add := func(ep runtime.Endpoint) (*hostv1.Listener, error) {
		if p.GroupLanguage(g) != runtime.LangGo {
			return s.byAddress(ep)
		}
		var lis net.Listener
		var err error
		if ep.Network == "unix" {
			lis, err = net.Listen("unix", ep.Addr)
			if err == nil {
				// The child serves this socket; closing the deployer's copy
				// must not remove its path.
				lis.(*net.UnixListener).SetUnlinkOnClose(false)
			}
		} else if d.net != nil {
			lis, err = d.net.Listen(g)
		} else {
			lis, err = net.Listen("tcp", "127.0.0.1:0")
		}
		if err != nil {
			return nil, fmt.Errorf("listen for %s: %w", ep, err)
		}
		return s.inherit(lis, ep)
	}
	for _, c := range p.Exposed(g) {
		ep := runtime.Endpoint{Transport: p.Transport, Network: p.Network}
		if p.Network == "unix" {
			ep.Addr = d.sockName(c, ordinal)
		}
		l, err := add(ep)
		if err != nil {
			return nil, err
		}
		s.listen[c] = l
	}
	if g == p.EntryGroup() {
		// Every replica serves the gateway; gatewayfront.go spreads over them.
		l, err := add(runtime.Endpoint{Transport: runtime.GatewayTransport, Network: "tcp"})
		if err != nil {
			return nil, err
		}
		s.gateway = l
	}
	if g == p.EntryGroup() && ordinal == 0 {
		l := s.gateway
		d.gateway = runtime.EndpointOf(l.GetEndpoint())
		d.gatewayURL = "http://" + d.gateway.Addr
		if p.InProcess() {
			d.entry = d.gateway
		} else {
			d.entry = runtime.EndpointOf(s.listen[p.Entry].GetEndpoint())
		}
	}
	l, err := add(runtime.Endpoint{Transport: controlTransport, Network: "unix", Addr: d.controlPath(g, ordinal)})
	if err != nil {
		return nil, err
	}
	s.control = l
	return s, nil
}

// hostConfig is what the replica whose sockets are s needs to know; peers
// maps each component it calls in another group to its replicas'
// endpoints.
func (d *Deployment) hostConfig(cfgJSON json.RawMessage, s *sockets, peers map[string][]runtime.Endpoint) *hostv1.HostConfig {
	hc := d.topo.HostConfig(s.group, d.id, cfgJSON)
	hc.Listeners = s.listen
	hc.Peers = endpointSets(peers)
	hc.Control = s.control
	hc.Gateway = s.gateway
	d.sidecars.Route(hc, s.group, s.ordinal)
	return hc
}
