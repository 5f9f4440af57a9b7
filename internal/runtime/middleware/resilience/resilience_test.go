package resilience

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// server is a real gRPC server on loopback whose answers the test steers:
// fail decides, for the n-th call it receives (from 1), the error it
// answers with instead of serving.
type server struct {
	calls atomic.Int64
	fail  atomic.Pointer[func(n int64) error]
	delay atomic.Int64
	addr  string
}

func startServer(t *testing.T) *server {
	t.Helper()
	s := &server{}
	none := func(int64) error { return nil }
	s.fail.Store(&none)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		n := s.calls.Add(1)
		if d := time.Duration(s.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}
		if err := (*s.fail.Load())(n); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	s.addr = lis.Addr().String()
	return s
}

func (s *server) failWith(f func(n int64) error) { s.fail.Store(&f) }

// client dials s through r's interceptor for peer "p".
func client(t *testing.T, s *server, r *Resilience) healthpb.HealthClient {
	t.Helper()
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(r.Client("p")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

func call(c healthpb.HealthClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

var unavailable = status.Error(codes.Unavailable, "injected")

func TestRetries(t *testing.T) {
	tests := []struct {
		name     string
		retries  int
		code     codes.Code
		wantOK   int // of 30 calls
		attempts uint64
	}{
		// The server fails two of every three calls it receives: with
		// two retries every call succeeds on its third attempt; with
		// one, calls alternate between failing twice and succeeding at
		// once (3 attempts per 2 calls); with none, one in three works.
		{"two retries", 2, codes.Unavailable, 30, 90},
		{"one retry", 1, codes.Unavailable, 15, 45},
		{"no retries", 0, codes.Unavailable, 10, 30},
		// not_found is the service's own answer, never retried.
		{"not retryable", 2, codes.NotFound, 10, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t)
			s.failWith(func(n int64) error {
				if n%3 != 0 {
					return status.Error(tt.code, "injected")
				}
				return nil
			})
			r := New("g", Options{Retries: tt.retries, RetryBudget: 1, MinRetriesPerSecond: 100, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, RetryOn: []codes.Code{codes.Unavailable}})
			c := client(t, s, r)
			ok := 0
			for range 30 {
				if call(c) == nil {
					ok++
				}
			}
			st := r.Stats("p")
			if ok != tt.wantOK || st.Attempts != tt.attempts || st.Calls != 30 || st.Retries != tt.attempts-30 {
				t.Errorf("%d ok, stats %+v; want %d ok, %d attempts", ok, st, tt.wantOK, tt.attempts)
			}
			if got := uint64(s.calls.Load()); got != tt.attempts {
				t.Errorf("server saw %d calls, want %d", got, tt.attempts)
			}
		})
	}
}

// TestRetryBudget: with no reserve and a 10% budget, 100 calls to a peer
// that always fails may be retried 10 times in all, however many retries
// each call would make; every call ends at a retry the budget refused.
func TestRetryBudget(t *testing.T) {
	s := startServer(t)
	s.failWith(func(int64) error { return unavailable })
	r := New("g", Options{Retries: 3, RetryBudget: 0.1, RetryOn: []codes.Code{codes.Unavailable}})
	reg := prometheus.NewRegistry()
	if err := r.Register(reg); err != nil {
		t.Fatal(err)
	}
	c := client(t, s, r)
	for range 100 {
		if err := call(c); status.Code(err) != codes.Unavailable {
			t.Fatalf("call: %v, want unavailable", err)
		}
	}
	st := r.Stats("p")
	if st.Retries != 10 || st.BudgetDenied != 100 || st.Attempts != 110 {
		t.Errorf("stats %+v, want 10 retries, 100 denied, 110 attempts", st)
	}
	if got := testutil.ToFloat64(r.metrics.retries.WithLabelValues("p")); got != 10 {
		t.Errorf("%s = %g, want 10", RetriesName, got)
	}
}

func TestBudgetWindowSlides(t *testing.T) {
	b := newBudget(10*time.Second, 0.5, 0)
	t0 := time.Unix(1000, 0)
	for range 4 {
		b.deposit(t0)
	}
	if !b.withdraw(t0) || !b.withdraw(t0) || b.withdraw(t0) {
		t.Fatal("4 calls at 50% should allow exactly 2 retries")
	}
	// Ten seconds on, those calls and retries have left the window.
	t1 := t0.Add(10 * time.Second)
	b.deposit(t1)
	b.deposit(t1)
	if !b.withdraw(t1) || b.withdraw(t1) {
		t.Error("after the window slid, 2 new calls should allow exactly 1 retry")
	}
}

func TestTimeout(t *testing.T) {
	s := startServer(t)
	s.delay.Store(int64(300 * time.Millisecond))
	r := New("g", Options{Timeout: 30 * time.Millisecond})
	c := client(t, s, r)
	start := time.Now()
	err := call(c)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("call: %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("the call took %s, want about the 30ms timeout", d)
	}
}

func TestBreaker(t *testing.T) {
	s := startServer(t)
	s.failWith(func(int64) error { return unavailable })
	const open = 300 * time.Millisecond
	r := New("g", Options{Breaker: &BreakerOptions{Failures: 3, Window: time.Minute, Open: open, Probes: 1}, Retries: 2, RetryBudget: 1, MinRetriesPerSecond: 100, RetryOn: []codes.Code{codes.Unavailable}})
	c := client(t, s, r)
	// The first call's three attempts open the breaker; the retries stop
	// there, and the next calls fail fast without reaching the server.
	for i := range 5 {
		err := call(c)
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("call %d: %v", i, err)
		}
		if i > 0 && !strings.Contains(err.Error(), ErrOpen.Error()) {
			t.Errorf("call %d: %v, want the breaker's fast failure", i, err)
		}
	}
	if n := s.calls.Load(); n != 3 {
		t.Errorf("server saw %d calls, want 3 before the breaker opened", n)
	}
	if st := r.Stats("p"); st.State != "open" || st.BreakerRejected != 4 {
		t.Errorf("stats %+v, want open with 4 rejected", st)
	}
	// After the open period one probe goes through; the peer has
	// recovered, so the breaker closes.
	s.failWith(func(int64) error { return nil })
	time.Sleep(open + 50*time.Millisecond)
	if err := call(c); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if st := r.Stats("p"); st.State != "closed" {
		t.Errorf("after a good probe the breaker is %s, want closed", st.State)
	}
}

func TestBreakerRatio(t *testing.T) {
	s := startServer(t)
	// Every other call fails: a 50% error ratio opens a breaker set at
	// 0.5 once min_calls calls were made.
	s.failWith(func(n int64) error {
		if n%2 == 0 {
			return unavailable
		}
		return nil
	})
	r := New("g", Options{Breaker: &BreakerOptions{Ratio: 0.5, MinCalls: 10, Window: time.Minute, Open: time.Minute, Probes: 1}})
	c := client(t, s, r)
	for range 20 {
		_ = call(c)
	}
	if n := s.calls.Load(); n != 10 {
		t.Errorf("server saw %d calls, want 10 (the breaker opens at the 10th, 5 of them failed)", n)
	}
}

func TestBackoffFullJitter(t *testing.T) {
	r := New("g", Options{Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	for _, tt := range []struct {
		n       int
		ceiling time.Duration
	}{{1, 10 * time.Millisecond}, {2, 20 * time.Millisecond}, {3, 40 * time.Millisecond}, {4, 50 * time.Millisecond}, {9, 50 * time.Millisecond}} {
		const samples = 4000
		var sum float64
		for range samples {
			d := r.peer("p").backoff(tt.n)
			if d < 0 || d > tt.ceiling {
				t.Fatalf("retry %d: backoff %s outside [0, %s]", tt.n, d, tt.ceiling)
			}
			sum += float64(d)
		}
		// Uniform on [0, c]: mean c/2, standard error c/sqrt(12·samples),
		// under 0.5% of c; 3% is far outside chance.
		if mean := sum / samples; mean < 0.47*float64(tt.ceiling) || mean > 0.53*float64(tt.ceiling) {
			t.Errorf("retry %d: mean backoff %s, want about %s", tt.n, time.Duration(mean), tt.ceiling/2)
		}
	}
	if d := New("g", Options{}).peer("p").backoff(3); d != 0 {
		t.Errorf("no backoff configured: %s", d)
	}
}

func TestCanceledDuringBackoff(t *testing.T) {
	s := startServer(t)
	s.failWith(func(int64) error { return unavailable })
	r := New("g", Options{Retries: 5, RetryBudget: 1, MinRetriesPerSecond: 100, Backoff: time.Hour, MaxBackoff: time.Hour, RetryOn: []codes.Code{codes.Unavailable}})
	c := client(t, s, r)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call: %v, want the caller's deadline", err)
	}
}
