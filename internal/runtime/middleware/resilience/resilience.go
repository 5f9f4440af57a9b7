// Package resilience is deploy.resilience's middleware: the client side of
// every cross-process hop retries calls that failed with a retryable code
// (within a retry budget, after an exponential backoff with full jitter),
// bounds each attempt with a timeout, and fails fast through a circuit
// breaker per peer (sony/gobreaker). It is a grpc client interceptor, so
// every transport gets it alike; its counts are Prometheus metrics beside
// deploy.metrics's.
package resilience

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Options configure the middleware; the zero value does nothing.
type Options struct {
	// Timeout bounds each attempt; 0 sets none.
	Timeout time.Duration
	// Retries is the most retries of one call.
	Retries int
	// RetryBudget is the share of calls that may be retries over
	// BudgetWindow, beyond MinRetriesPerSecond (Finagle's RetryBudget).
	RetryBudget float64
	// MinRetriesPerSecond is the budget's reserve, so that a peer called
	// rarely can still be retried (Finagle's default is 10,
	// DefaultMinRetriesPerSecond).
	MinRetriesPerSecond float64
	// Backoff is the base of the backoff: before retry n (from 1) the
	// caller waits a uniform random time up to min(MaxBackoff,
	// Backoff·2^(n-1)) ("full jitter").
	Backoff, MaxBackoff time.Duration
	// RetryOn are the codes retried.
	RetryOn []codes.Code
	// Breaker, when set, is a circuit breaker per peer.
	Breaker *BreakerOptions
	// Peers replace these options for calls to the peers named
	// (deploy.resilience.groups); their own Peers are ignored.
	Peers map[string]Options
}

// forPeer are the options of calls to name.
func (o Options) forPeer(name string) Options {
	if po, ok := o.Peers[name]; ok {
		po.Peers = nil
		return po
	}
	return o
}

// BreakerOptions are deploy.resilience.breaker.
type BreakerOptions struct {
	// Failures opens the breaker after that many consecutive failures; 0
	// leaves this rule out.
	Failures int
	// Ratio opens the breaker once the failed share of the calls in the
	// current Window reaches it, with at least MinCalls calls; 0 leaves
	// this rule out.
	Ratio    float64
	Window   time.Duration
	MinCalls int
	// Open is how long the breaker stays open before it lets Probes calls
	// through (half-open); their outcome closes or reopens it.
	Open   time.Duration
	Probes int
}

// DefaultMinRetriesPerSecond is Finagle's reserve of retries.
const DefaultMinRetriesPerSecond = 10

// BudgetWindow is the time over which the retry budget counts calls.
const BudgetWindow = 10 * time.Second

// failureCodes are the outcomes the breaker counts as the peer failing:
// the call did not reach it, or it could not serve. A service's own
// answers (not_found, invalid_argument …) say it is healthy.
var failureCodes = []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Internal, codes.Unknown, codes.Aborted}

// ErrOpen is wrapped in the Unavailable status of a call the open breaker
// refused.
var ErrOpen = errors.New("circuit breaker open")

// Resilience is one host's middleware: a budget and a breaker per peer.
type Resilience struct {
	opts    Options
	group   string
	metrics *metrics

	mu    sync.Mutex
	peers map[string]*peer
}

// New makes a host's middleware; group labels its metrics.
func New(group string, opts Options) *Resilience {
	return &Resilience{opts: opts, group: group, metrics: newMetrics(group), peers: map[string]*peer{}}
}

// Register adds the middleware's metrics to reg (the host's
// deploy.metrics registry).
func (r *Resilience) Register(reg prometheus.Registerer) error {
	return r.metrics.register(reg)
}

// Stats are the counts of one peer's calls.
type Stats struct {
	Calls, Attempts, Retries uint64
	// BudgetDenied counts retries the budget refused; BreakerRejected
	// the attempts the open breaker failed fast.
	BudgetDenied, BreakerRejected uint64
	// State is the breaker's state ("closed", "half-open", "open"), ""
	// without a breaker.
	State string
}

// Stats returns peer's counts.
func (r *Resilience) Stats(peerName string) Stats {
	p := r.peer(peerName)
	s := Stats{Calls: p.calls.Load(), Attempts: p.attempts.Load(), Retries: p.retries.Load(), BudgetDenied: p.denied.Load(), BreakerRejected: p.rejected.Load()}
	if p.cb != nil {
		s.State = p.cb.State().String()
	}
	return s
}

type peer struct {
	name   string
	opts   Options // its own, or the host's
	cb     *gobreaker.CircuitBreaker[any]
	budget *budget

	calls, attempts, retries, denied, rejected atomic.Uint64
}

func (r *Resilience) peer(name string) *peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.peers[name]; ok {
		return p
	}
	opts := r.opts.forPeer(name)
	p := &peer{name: name, opts: opts, budget: newBudget(BudgetWindow, opts.RetryBudget, opts.MinRetriesPerSecond)}
	if b := opts.Breaker; b != nil {
		p.cb = gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
			Name:        name,
			MaxRequests: uint32(max(b.Probes, 1)),
			Interval:    b.Window,
			Timeout:     b.Open,
			ReadyToTrip: func(c gobreaker.Counts) bool {
				if b.Failures > 0 && c.ConsecutiveFailures >= uint32(b.Failures) {
					return true
				}
				return b.Ratio > 0 && c.Requests >= uint32(max(b.MinCalls, 1)) && float64(c.TotalFailures) >= b.Ratio*float64(c.Requests)
			},
			OnStateChange: func(_ string, _, to gobreaker.State) {
				r.metrics.state.WithLabelValues(name).Set(float64(to))
				if to == gobreaker.StateOpen {
					r.metrics.opened.WithLabelValues(name).Inc()
				}
			},
			IsSuccessful: func(err error) bool {
				return err == nil || !slices.Contains(failureCodes, status.Code(err))
			},
		})
		r.metrics.state.WithLabelValues(name).Set(float64(gobreaker.StateClosed))
	}
	r.peers[name] = p
	return p
}

// Client is the interceptor of calls to peerName.
func (r *Resilience) Client(peerName string) grpc.UnaryClientInterceptor {
	p := r.peer(peerName)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		p.calls.Add(1)
		p.budget.deposit(time.Now())
		var err error
		for attempt := 0; ; attempt++ {
			p.attempts.Add(1)
			err = r.attempt(ctx, p, method, req, reply, cc, invoker, opts)
			if err == nil || attempt >= p.opts.Retries || !p.retryable(err) || ctx.Err() != nil {
				return err
			}
			if !p.budget.withdraw(time.Now()) {
				p.denied.Add(1)
				r.metrics.denied.WithLabelValues(peerName).Inc()
				return err
			}
			if err := sleep(ctx, p.backoff(attempt+1)); err != nil {
				return status.FromContextError(err).Err()
			}
			p.retries.Add(1)
			r.metrics.retries.WithLabelValues(peerName).Inc()
		}
	}
}

func (r *Resilience) attempt(ctx context.Context, p *peer, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) error {
	call := func() (any, error) {
		actx := ctx
		if p.opts.Timeout > 0 {
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeout(ctx, p.opts.Timeout)
			defer cancel()
		}
		return nil, invoker(actx, method, req, reply, cc, opts...)
	}
	if p.cb == nil {
		_, err := call()
		return err
	}
	_, err := p.cb.Execute(call)
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		p.rejected.Add(1)
		r.metrics.rejected.WithLabelValues(p.name).Inc()
		return status.Error(codes.Unavailable, fmt.Sprintf("%s: %v to %s", ErrOpen, err, p.name))
	}
	return err
}

// retryable reports whether a failed attempt may be retried: its code is
// in RetryOn and the breaker did not refuse it (a retry could only meet the
// same open breaker).
func (p *peer) retryable(err error) bool {
	st, _ := status.FromError(err)
	if st.Code() == codes.Unavailable && strings.HasPrefix(st.Message(), ErrOpen.Error()) {
		return false
	}
	return slices.Contains(p.opts.RetryOn, st.Code())
}

// backoff is the wait before retry n (from 1): full jitter over an
// exponentially growing cap.
func (p *peer) backoff(n int) time.Duration {
	if p.opts.Backoff <= 0 {
		return 0
	}
	ceiling := p.opts.Backoff << min(n-1, 30)
	if p.opts.MaxBackoff > 0 && (ceiling > p.opts.MaxBackoff || ceiling <= 0) {
		ceiling = p.opts.MaxBackoff
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
