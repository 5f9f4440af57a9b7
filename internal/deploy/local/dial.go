package local

import (
	"context"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// Dial connects to the entry over its transport (the gateway's http
// transport with inproc). With deploy.mtls and no opts.TLS of the
// caller's, it presents the deployment's client certificate.
func (d *Deployment) Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error) {
	if opts.TLS == nil && d.entry != d.gateway {
		opts.TLS = d.mesh.clientTLS(d.topo.Entry)
	}
	return deploy.DialEndpoint(ctx, d.entry, opts)
}
