package local

import (
	"context"
	"fmt"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// Dial connects to the entry over its transport (the gateway's http
// transport with inproc). With deploy.mtls and no opts.TLS of the
// caller's, it presents the deployment's client certificate. When the entry
// group can have more than one replica, the connection is a balancer over
// the entry's replicas, with the deployment's balancing policy, and the
// deployer keeps its endpoint set current as callers' sets are
// (replicas.go).
func (d *Deployment) Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error) {
	if opts.TLS == nil && d.entry != d.gateway {
		opts.TLS = d.mesh.ClientTLS(d.topo.Entry)
	}
	g := d.topo.EntryGroup()
	if grp := d.topo.Groups[g]; grp.Replicas == 1 && grp.Autoscale == nil {
		return deploy.DialEndpoint(ctx, d.entry, opts)
	}
	b := balancer.New(d.topo.Entry, balancer.Options{Picker: balancer.Policies[d.topo.Balancer]})
	d.mu.Lock()
	d.clients = append(d.clients, entryClient{b, opts})
	d.mu.Unlock()
	if err := b.Update(d.entryAddresses(opts)); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("entry %s: %w", d.topo.Entry, err)
	}
	return b, nil
}

// entryClient is a balancer Dial returned, which Scale keeps current.
type entryClient struct {
	b    *balancer.Balancer
	opts transport.DialOptions
}

// entryAddresses are the live entry replicas, as a balancer dials them.
func (d *Deployment) entryAddresses(opts transport.DialOptions) []balancer.Address {
	if out := d.sidecars.Entries(opts); out != nil {
		return out
	}
	var out []balancer.Address
	for _, p := range d.live(d.topo.EntryGroup()) {
		ep := p.listen[d.topo.Entry]
		out = append(out, balancer.Address{
			Addr: ep.String(),
			Dial: func(ctx context.Context) (transport.Conn, error) {
				return deploy.DialEndpoint(ctx, ep, opts)
			},
		})
	}
	return out
}

// pushClients gives every balancer Dial returned the entry's live
// replicas; a closed one is dropped.
func (d *Deployment) pushClients() {
	d.mu.Lock()
	clients := d.clients
	d.mu.Unlock()
	var kept []entryClient
	for _, c := range clients {
		if err := c.b.Update(d.entryAddresses(c.opts)); err == nil {
			kept = append(kept, c)
		}
	}
	d.mu.Lock()
	d.clients = kept
	d.mu.Unlock()
}
