package local

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// NotReadyError is a deployment whose children did not all pass their
// health checks in time; it carries every child's output tail.
type NotReadyError struct {
	Err   error
	Tails map[string]string
}

func (e *NotReadyError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	for _, g := range slices.Sorted(maps.Keys(e.Tails)) {
		fmt.Fprintf(&b, "\ngroup %s last output:\n%s", g, deploy.IndentTail(strings.Split(e.Tails[g], "\n")))
	}
	return b.String()
}

func (e *NotReadyError) Unwrap() error { return e.Err }

// StderrTails maps each group to its last output lines, joined.
func (e *NotReadyError) StderrTails() map[string]string { return e.Tails }

// waitReady health-checks every listener of every child in procs until all
// report SERVING, a child exits, or ctx ends.
func (d *Deployment) waitReady(ctx context.Context, procs []*process) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	// pending are the checks not yet passed, so that a start timeout,
	// which ends them all at once, can say which it was waiting for.
	var mu sync.Mutex
	pending := map[string]bool{}
	check := func(name string, f func() error) {
		mu.Lock()
		pending[name] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				cancel(fmt.Errorf("%s: %w", name, err))
				return
			}
			mu.Lock()
			delete(pending, name)
			mu.Unlock()
		}()
	}
	for _, p := range procs {
		// A child that exits fails the deployment at once, whatever the
		// health checks are doing.
		go func() {
			select {
			case <-p.done:
				cancel(p.Exit())
			case <-ctx.Done():
			}
		}()
		checks := 0
		for _, c := range slices.Sorted(maps.Keys(p.listen)) {
			ep := p.listen[c]
			var tc *tls.Config // the gateway stays plaintext
			if c != "gateway" && !d.plaintextBehindSidecar(p) {
				tc = d.mesh.ClientTLS(c)
			}
			checks++
			check(fmt.Sprintf("%s: %s on %s", p.info, c, ep), func() error {
				opts := d.healthDial()
				opts.TLS = tc
				if err := checkHealth(ctx, ep, opts); err != nil {
					return fmt.Errorf("not ready: %w", err)
				}
				return nil
			})
		}
		if (checks == 0 && p.info.Role == deploy.RoleHost) || d.langHost(p) {
			// No listener to probe: a group nobody calls across
			// processes. Its ready line is the only sign of life. (A
			// proxy with only outbound listeners has none to wait for.)
			// A Java or Python host serves before it handles SIGTERM,
			// which it does by the time it prints the ready line.
			check(fmt.Sprintf("%s: ready line", p.info), func() error {
				if err := p.waitLine(ctx, runtime.ReadyMarker); err != nil {
					return fmt.Errorf("not printed: %w", err)
				}
				return nil
			})
		}
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		var ee *deploy.ExitError
		if errors.As(err, &ee) {
			return err
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			// The caller's deadline ended every check at once; name the
			// ones it cut short.
			if left := slices.Sorted(maps.Keys(pending)); len(left) > 0 {
				err = fmt.Errorf("%w, waiting for %s", err, strings.Join(left, "; "))
			}
		}
		return &NotReadyError{Err: err, Tails: deploy.StderrTails(d.Processes())}
	}
	return nil
}

// waitLine polls the output tail for a line containing s.
func (p *process) waitLine(ctx context.Context, s string) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		for _, l := range p.Tail() {
			if strings.Contains(l, s) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// healthDial is how the deployer reaches its children's listeners.
func (d *Deployment) healthDial() transport.DialOptions {
	if d.net == nil {
		return transport.DialOptions{}
	}
	return transport.DialOptions{Dialer: d.net.Dial}
}

// checkHealth calls the gRPC health service at ep over ep's transport until
// it answers SERVING or ctx ends; opts.TLS is nil without mTLS.
func checkHealth(ctx context.Context, ep runtime.Endpoint, opts transport.DialOptions) error {
	var conn transport.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	var last error
	backoff := 5 * time.Millisecond
	for {
		if conn == nil {
			c, err := deploy.DialEndpoint(ctx, ep, opts)
			if err != nil {
				last = err
			} else {
				conn = c
			}
		}
		if conn != nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
			cancel()
			switch {
			case err != nil:
				last = err
			case resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
				return nil
			default:
				last = fmt.Errorf("health status %s", resp.GetStatus())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last health check: %v)", context.Cause(ctx), last)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}
