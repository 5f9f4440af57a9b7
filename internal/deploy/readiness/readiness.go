// Package readiness waits until a deployment's new processes are ready:
// each runs its checks (a gRPC health check of every listener over its own
// transport, Health; or a line in its output, Line) until all pass. The
// wait fails at once when one of the processes exits, and a timeout names
// the checks it was still waiting for and carries every process's last
// output (*NotReadyError).
package readiness

import (
	"context"
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

// Process is one process to wait for.
type Process struct {
	// Name names it in messages (its deploy.ProcessInfo).
	Name string
	// Done is closed when it exits; Exit then says how.
	Done <-chan struct{}
	Exit func() error
	// Checks all pass once it is ready.
	Checks []Check
}

// Check is one sign that a process is ready.
type Check struct {
	// Name says what is checked ("a on tcp://127.0.0.1:4000").
	Name string
	// Run returns nil once the check passes, or an error when it cannot,
	// or when its context ends.
	Run func(ctx context.Context) error
}

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

// Wait runs the checks of every process in procs until all pass, a
// process exits (its Exit error, returned as it is), or ctx ends. When
// ctx is canceled (not past its deadline) the error says so, with ctx's
// cause. Any other failure is a *NotReadyError with tails(), the
// deployment's processes' output.
func Wait(ctx context.Context, procs []Process, tails func() map[string]string) error {
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	// pending are the checks not yet passed, so that a start timeout,
	// which ends them all at once, can say which it was waiting for.
	var mu sync.Mutex
	pending := map[string]bool{}
	for _, p := range procs {
		// A child that exits fails the deployment at once, whatever the
		// health checks are doing.
		go func() {
			select {
			case <-p.Done:
				cancel(p.Exit())
			case <-ctx.Done():
			}
		}()
		for _, c := range p.Checks {
			name := p.Name + ": " + c.Name
			mu.Lock()
			pending[name] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Run(ctx); err != nil {
					cancel(fmt.Errorf("%s: %w", name, err))
					return
				}
				mu.Lock()
				delete(pending, name)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	err := context.Cause(ctx)
	if err == nil {
		return nil
	}
	var ee *deploy.ExitError
	if errors.As(err, &ee) {
		return err
	}
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		// The caller stopped the start (a user's Ctrl-C): nothing went
		// wrong with the processes, so their output is not shown as if
		// something had.
		mu.Lock()
		left := len(pending)
		mu.Unlock()
		return fmt.Errorf("start stopped with %d of its checks not yet passed: %w", left, context.Cause(parent))
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The caller's deadline ended every check at once; name the
		// ones it cut short.
		if left := slices.Sorted(maps.Keys(pending)); len(left) > 0 {
			err = fmt.Errorf("%w, waiting for %s", err, strings.Join(left, "; "))
		}
	}
	return &NotReadyError{Err: err, Tails: tails()}
}

// Line is the check that a process has printed a line containing s: it
// polls tail, the process's last output lines.
func Line(tail func() []string, s string) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			for _, l := range tail() {
				if strings.Contains(l, s) {
					return nil
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("not printed: %w", context.Cause(ctx))
			case <-t.C:
			}
		}
	}
}

// Health is the check that the gRPC health service at ep answers SERVING,
// called over ep's transport until it does; opts.TLS is nil without mTLS.
func Health(ep runtime.Endpoint, opts transport.DialOptions) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := checkHealth(ctx, ep, opts); err != nil {
			return fmt.Errorf("not ready: %w", err)
		}
		return nil
	}
}

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
