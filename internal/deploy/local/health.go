package local

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/readiness"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// waitReady health-checks every listener of every child in procs until all
// report SERVING, a child exits, or ctx ends (internal/deploy/readiness).
func (d *Deployment) waitReady(ctx context.Context, procs []*process) error {
	ps := make([]readiness.Process, len(procs))
	for i, p := range procs {
		rp := readiness.Process{Name: p.info.String(), Done: p.done, Exit: func() error { return p.Exit() }}
		for _, c := range slices.Sorted(maps.Keys(p.listen)) {
			ep := p.listen[c]
			opts := d.healthDial()
			if c != "gateway" && !d.plaintextBehindSidecar(p) { // the gateway stays plaintext
				opts.TLS = d.mesh.ClientTLS(c)
			}
			rp.Checks = append(rp.Checks, readiness.Check{Name: fmt.Sprintf("%s on %s", c, ep), Run: readiness.Health(ep, opts)})
		}
		if (len(rp.Checks) == 0 && p.info.Role == deploy.RoleHost) || d.langHost(p) {
			// No listener to probe: a group nobody calls across
			// processes. Its ready line is the only sign of life. (A
			// proxy with only outbound listeners has none to wait for.)
			// A Java or Python host serves before it handles SIGTERM,
			// which it does by the time it prints the ready line.
			rp.Checks = append(rp.Checks, readiness.Check{Name: "ready line", Run: readiness.Line(p.Tail, runtime.ReadyMarker)})
		}
		ps[i] = rp
	}
	return readiness.Wait(ctx, ps, func() map[string]string { return deploy.StderrTails(d.Processes()) })
}

// healthDial is how the deployer reaches its children's listeners.
func (d *Deployment) healthDial() transport.DialOptions {
	if d.net == nil {
		return transport.DialOptions{}
	}
	return transport.DialOptions{Dialer: d.net.Dial}
}
