package local

import (
	"context"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// Dial connects to the entry over its transport (the gateway's http
// transport with inproc).
func (d *Deployment) Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error) {
	return deploy.DialEndpoint(ctx, d.entry, opts)
}
