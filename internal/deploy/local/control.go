package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// The deployer's side of the control channel: every host serves the host
// protocol's Control service on a unix socket in the deployment's temp dir,
// bound with the other listeners, and these methods call it. Replicas,
// autoscaling and sidecars change a running deployment through them.

// controlTransport is what the control channel speaks: gRPC, served by
// grpc-go in a Go host and by its own gRPC library in a host of another
// language.
const controlTransport = "grpc"

// controlPath is where replica ordinal of group i serves its control
// service. It is named by index because group names can outgrow a socket
// path's 108 bytes.
func (d *Deployment) controlPath(i, ordinal int) string {
	if ordinal == 0 {
		return filepath.Join(d.dir, fmt.Sprintf("control-%d.sock", i))
	}
	return filepath.Join(d.dir, fmt.Sprintf("control-%d-%d.sock", i, ordinal))
}

// groupIndex is the index of the named group.
func (d *Deployment) groupIndex(group string) (int, error) {
	i := slices.IndexFunc(d.topo.Groups, func(g runtime.Group) bool { return g.Name == group })
	if i < 0 {
		var names []string
		for _, g := range d.topo.Groups {
			names = append(names, g.Name)
		}
		return -1, fmt.Errorf("deployment %s has no group %q (groups: %v)", d.id, group, names)
	}
	return i, nil
}

// control calls f with a client of the control service of every live
// replica of group.
func (d *Deployment) control(group string, f func(hostv1.ControlClient) error) error {
	i, err := d.groupIndex(group)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range d.live(i) {
		errs = append(errs, d.controlProcess(p, f))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("group %s: %w", group, err)
	}
	return nil
}

// controlProcess calls f with a client of p's control service. The
// connection lasts one call: control calls are rare, and a cached one
// would need closing when the replica goes.
func (d *Deployment) controlProcess(p *process, f func(hostv1.ControlClient) error) error {
	cc, err := grpc.NewClient("unix://"+d.controlPath(p.group, p.ordinal), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("%s: control channel: %w", p.info.Name, err)
	}
	defer cc.Close()
	return f(hostv1.NewControlClient(cc))
}

// UpdatePeers replaces, in group's host, the endpoint set of each component
// named in peers; its other peers keep theirs. Calls in flight finish where
// they are; an endpoint dropped from a set is closed once its calls have
// finished. A component the group does not call, or an unknown transport,
// fails the whole update and changes nothing.
func (d *Deployment) UpdatePeers(ctx context.Context, group string, peers map[string][]runtime.Endpoint) error {
	req := &hostv1.UpdatePeersRequest{Peers: map[string]*hostv1.EndpointSet{}}
	for c, eps := range peers {
		set := &hostv1.EndpointSet{}
		for _, ep := range eps {
			set.Endpoints = append(set.Endpoints, ep.Proto())
		}
		req.Peers[c] = set
	}
	return d.control(group, func(cc hostv1.ControlClient) error {
		_, err := cc.UpdatePeers(ctx, req)
		return err
	})
}

// Drain makes group's host refuse new calls on its listeners (with
// UNAVAILABLE; its health service answers NOT_SERVING) and returns once its
// calls in flight have finished, or with an error when ctx ends first.
func (d *Deployment) Drain(ctx context.Context, group string) error {
	return d.control(group, func(cc hostv1.ControlClient) error {
		_, err := cc.Drain(ctx, &hostv1.DrainRequest{})
		return err
	})
}

// StopGroup stops every replica of group gracefully: each drains,
// finishes its calls in flight (for as long as ctx allows) and exits with
// status 0. StopGroup returns once the processes have exited. The
// deployment's Exited and Crashed report the exits like any other.
func (d *Deployment) StopGroup(ctx context.Context, group string) error {
	i, err := d.groupIndex(group)
	if err != nil {
		return err
	}
	procs := d.live(i)
	err = d.control(group, func(cc hostv1.ControlClient) error {
		_, err := cc.Stop(ctx, &hostv1.StopRequest{})
		return err
	})
	if err != nil {
		return err
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("group %s: asked to stop, %s still running: %w", group, p.info.Name, ctx.Err())
		}
		if p.waitErr != nil {
			return fmt.Errorf("group %s: %s stopped with %w", group, p.info.Name, p.waitErr)
		}
	}
	return nil
}
