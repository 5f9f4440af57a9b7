package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// sockets holds the listening sockets the deployer bound, by group.
type sockets struct {
	listen  []map[string]*hostv1.Listener // group → component → listener
	gateway *hostv1.Listener              // in the entry group
	control []*hostv1.Listener            // group → its host's control service
	files   [][]*os.File                  // group → inherited files, fd 3 upward
	closers []io.Closer
}

func (s *sockets) close() {
	for _, c := range s.closers {
		_ = c.Close()
	}
	s.closers = nil
}

// bind creates every listener of the deployment.
func (d *Deployment) bind() (_ *sockets, err error) {
	p := d.topo
	s := &sockets{
		listen:  make([]map[string]*hostv1.Listener, len(p.Groups)),
		control: make([]*hostv1.Listener, len(p.Groups)),
		files:   make([][]*os.File, len(p.Groups)),
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	add := func(g int, ep runtime.Endpoint) (*hostv1.Listener, error) {
		var lis net.Listener
		var err error
		if ep.Network == "unix" {
			lis, err = net.Listen("unix", ep.Addr)
			if err == nil {
				// The child serves this socket; closing the deployer's copy
				// must not remove its path.
				lis.(*net.UnixListener).SetUnlinkOnClose(false)
			}
		} else {
			lis, err = net.Listen("tcp", "127.0.0.1:0")
		}
		if err != nil {
			return nil, fmt.Errorf("listen for %s: %w", ep, err)
		}
		s.closers = append(s.closers, lis)
		f, err := lis.(interface{ File() (*os.File, error) }).File()
		if err != nil {
			return nil, fmt.Errorf("listener file for %s: %w", ep, err)
		}
		s.closers = append(s.closers, f)
		s.files[g] = append(s.files[g], f)
		ep.Addr = lis.Addr().String()
		// ExtraFiles[i] becomes fd 3+i in the child.
		return &hostv1.Listener{Endpoint: ep.Proto(), Fd: int32(2 + len(s.files[g]))}, nil
	}
	for i := range p.Groups {
		s.listen[i] = map[string]*hostv1.Listener{}
		for _, c := range p.Exposed(i) {
			ep := runtime.Endpoint{Transport: p.Transport, Network: p.Network}
			if p.Network == "unix" {
				ep.Addr = filepath.Join(d.dir, c+".sock")
			}
			l, err := add(i, ep)
			if err != nil {
				return nil, err
			}
			s.listen[i][c] = l
		}
		if i == p.EntryGroup() {
			l, err := add(i, runtime.Endpoint{Transport: runtime.GatewayTransport, Network: "tcp"})
			if err != nil {
				return nil, err
			}
			s.gateway = l
			d.gateway = runtime.EndpointOf(l.GetEndpoint())
			d.gatewayURL = "http://" + d.gateway.Addr
			if p.InProcess() {
				d.entry = d.gateway
			} else {
				d.entry = runtime.EndpointOf(s.listen[i][p.Entry].GetEndpoint())
			}
		}
		l, err := add(i, runtime.Endpoint{Transport: controlTransport, Network: "unix", Addr: d.controlPath(i)})
		if err != nil {
			return nil, err
		}
		s.control[i] = l
	}
	return s, nil
}

// hostConfig is what group i's host needs to know.
func (d *Deployment) hostConfig(i int, cfgJSON json.RawMessage, s *sockets) *hostv1.HostConfig {
	p := d.topo
	g := p.Groups[i]
	hc := &hostv1.HostConfig{
		Deployment: d.id,
		App:        p.App.Name,
		ConfigJson: string(cfgJSON),
		Transport:  p.Transport,
		Group:      g.Name,
		Components: g.Components,
		Listeners:  s.listen[i],
		Entry:      p.Entry,
		Peers:      map[string]*hostv1.EndpointSet{},
		Control:    s.control[i],
		TransportOptions: &hostv1.TransportOptions{
			HttpCodec:  p.HTTPCodec,
			HttpLimits: runtime.HTTPLimitsProto(p.HTTPLimits),
		},
	}
	if i == p.EntryGroup() {
		hc.Gateway = s.gateway
	}
	for _, name := range g.Components {
		c, _ := p.Component(name)
		for _, dep := range c.Deps {
			j := p.GroupOf(dep)
			if j == i {
				continue
			}
			hc.Peers[dep] = &hostv1.EndpointSet{Endpoints: []*hostv1.Endpoint{s.listen[j][dep].GetEndpoint()}}
		}
	}
	d.routeThroughSidecars(i, hc)
	return hc
}
