package deploy

import (
	"context"
	"fmt"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// DialEndpoint connects to ep with its transport.
func DialEndpoint(ctx context.Context, ep runtime.Endpoint, opts transport.DialOptions) (transport.Conn, error) {
	tr, err := transport.Lookup(ep.Transport)
	if err != nil {
		return nil, err
	}
	c, err := tr.Dial(ctx, ep.Network, ep.Addr, opts)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ep, err)
	}
	return c, nil
}
