package balancer_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/proto/echo"
)

// server is one endpoint: a real server of one transport, serving echo,
// counting the calls it gets and holding those that ask it to.
type server struct {
	addr    string
	tr      transport.Transport
	calls   atomic.Int64 // calls received
	active  atomic.Int64 // calls being handled
	release chan struct{}
	// closes counts client connections to it closed by the balancer, and
	// early those closed while it was handling a call.
	closes, early atomic.Int64
	// stop ends the server and its connections, as a killed process
	// would.
	stop func()
}

// hold is the payload of a call the server holds until release is closed.
const hold = "hold"

func startServer(t testing.TB, tr transport.Transport) *server {
	t.Helper()
	return startServerAt(t, tr, "127.0.0.1:0")
}

// startServerAt starts a server listening on addr.
func startServerAt(t testing.TB, tr transport.Transport, addr string) *server {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: lis.Addr().String(), tr: tr, release: make(chan struct{})}
	count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		s.calls.Add(1)
		s.active.Add(1)
		defer s.active.Add(-1)
		if r, ok := req.(*echo.EchoRequest); ok && string(r.GetPayload()) == hold {
			select {
			case <-s.release:
			case <-ctx.Done():
			}
		}
		return h(ctx, req)
	}
	srv := tr.NewServer(transport.ServerOptions{Interceptors: []grpc.UnaryServerInterceptor{count}})
	srv.RegisterService(&echo.Echo_ServiceDesc, echo.Service{})
	// The health service, unary methods only, as every svclab host
	// serves it beside its components.
	hdesc := healthpb.Health_ServiceDesc
	hdesc.Streams = nil
	srv.RegisterService(&hdesc, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	var once sync.Once
	s.stop = func() { once.Do(srv.Stop) }
	t.Cleanup(s.stop)
	return s
}

// address dials the server with its transport. The connection it returns
// records when the balancer closes it.
func (s *server) address() balancer.Address {
	return balancer.Address{Addr: s.addr, Dial: func(ctx context.Context) (transport.Conn, error) {
		c, err := s.tr.Dial(ctx, "tcp", s.addr, transport.DialOptions{})
		if err != nil {
			return nil, err
		}
		return &closeCounter{Conn: c, s: s}, nil
	}}
}

type closeCounter struct {
	transport.Conn
	s *server
}

func (c *closeCounter) Close() error {
	// The server answers before the client's call returns, so a handler
	// still running means the balancer closed under a call in flight.
	if c.s.active.Load() > 0 {
		c.s.early.Add(1)
	}
	c.s.closes.Add(1)
	return c.Conn.Close()
}

func addresses(ss ...*server) []balancer.Address {
	var as []balancer.Address
	for _, s := range ss {
		as = append(as, s.address())
	}
	return as
}

// networkTransports lists every transport that crosses processes.
func networkTransports(t testing.TB) []transport.Transport {
	var trs []transport.Transport
	for _, n := range transport.Names() {
		tr, err := transport.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	if len(trs) < 3 {
		t.Fatalf("transports %v: want at least grpc, http and netrpc", transport.Names())
	}
	return trs
}

func call(ctx context.Context, cc grpc.ClientConnInterface, payload string) error {
	resp, err := echo.NewEchoClient(cc).Echo(ctx, &echo.EchoRequest{Payload: []byte(payload)})
	if err == nil && string(resp.GetPayload()) != payload {
		err = fmt.Errorf("answer %q, want %q", resp.GetPayload(), payload)
	}
	return err
}

func update(t *testing.T, b *balancer.Balancer, ss ...*server) {
	t.Helper()
	if err := b.Update(addresses(ss...)); err != nil {
		t.Fatal(err)
	}
}

// TestRoundRobin checks that calls are spread exactly evenly, on every
// transport.
func TestRoundRobin(t *testing.T) {
	for _, tr := range networkTransports(t) {
		t.Run(tr.Name(), func(t *testing.T) {
			ss := []*server{startServer(t, tr), startServer(t, tr), startServer(t, tr)}
			b := balancer.New("echo", balancer.Options{})
			defer b.Close()
			update(t, b, ss...)
			ctx := context.Background()
			const rounds = 40
			for range rounds * len(ss) {
				if err := call(ctx, b, "hi"); err != nil {
					t.Fatal(err)
				}
			}
			for i, s := range ss {
				if got := s.calls.Load(); got != rounds {
					t.Errorf("endpoint %d got %d calls, want %d", i, got, rounds)
				}
			}
		})
	}
}

// TestUpdateWhileCalling changes the set under a steady stream of
// concurrent calls: no call fails, calls follow the set, and an endpoint
// dropped from the set is closed only after its calls in flight have
// finished.
func TestUpdateWhileCalling(t *testing.T) {
	for _, tr := range networkTransports(t) {
		t.Run(tr.Name(), func(t *testing.T) {
			a, bb, c := startServer(t, tr), startServer(t, tr), startServer(t, tr)
			// Updates wait for the held calls, however slow the machine.
			b := balancer.New("echo", balancer.Options{RetireWait: time.Minute})
			defer b.Close()
			update(t, b, a, bb)
			ctx := context.Background()

			// One held call in flight on each of a and b, which are about
			// to be dropped: round robin over two gives two consecutive
			// calls one each.
			held := make(chan error, 2)
			for range 2 {
				go func() { held <- call(ctx, b, hold) }()
			}
			waitActive(t, a, 1)
			waitActive(t, bb, 1)

			stop := make(chan struct{})
			var failed atomic.Int64
			var firstErr atomic.Value
			var wg sync.WaitGroup
			const callers = 4
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := call(ctx, b, "hi"); err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err)
						}
					}
				}()
			}
			waitCalls(t, a, a.calls.Load()+10)
			// Each update gives new calls the new set at once, and returns
			// once the calls on the endpoints it dropped have finished:
			// here, when the held calls are released.
			updated := make(chan error, 2)
			go func() { updated <- b.Update(addresses(bb, c)) }()
			waitCalls(t, c, 20)
			go func() { updated <- b.Update(addresses(c)) }()
			waitCalls(t, c, c.calls.Load()+50)
			select {
			case err := <-updated:
				t.Fatalf("an update returned (%v) while a call was in flight on an endpoint it dropped", err)
			default:
			}
			for name, s := range map[string]*server{"a": a, "b": bb} {
				if n := s.closes.Load(); n != 0 {
					t.Errorf("%s's connection closed with a call in flight", name)
				}
			}
			close(a.release)
			close(bb.release)
			for range 2 {
				if err := <-held; err != nil {
					t.Errorf("call in flight on a dropped endpoint: %v", err)
				}
			}
			for range 2 {
				if err := <-updated; err != nil {
					t.Fatal(err)
				}
			}
			// No call reaches a dropped endpoint once its update returned.
			frozenA, frozenB := a.calls.Load(), bb.calls.Load()
			waitCalls(t, c, c.calls.Load()+50)
			close(stop)
			wg.Wait()

			if n := failed.Load(); n > 0 {
				t.Errorf("%d calls failed while the set changed; first: %v", n, firstErr.Load())
			}
			for name, got := range map[string][2]int64{"a": {frozenA, a.calls.Load()}, "b": {frozenB, bb.calls.Load()}} {
				if got[1] != got[0] {
					t.Errorf("%s got %d calls after the update that dropped it returned", name, got[1]-got[0])
				}
			}
			for name, s := range map[string]*server{"a": a, "b": bb} {
				waitClosed(t, name, s)
			}
			if n := c.closes.Load(); n != 0 {
				t.Errorf("c's connection, still in the set, closed %d times", n)
			}
		})
	}
}

// TestUpdateRetireWait checks that Update waits for a call in flight on an
// endpoint it drops for at most Options.RetireWait, and that the call goes
// on.
func TestUpdateRetireWait(t *testing.T) {
	tr, err := transport.Lookup("http")
	if err != nil {
		t.Fatal(err)
	}
	s, s2 := startServer(t, tr), startServer(t, tr)
	const wait = 200 * time.Millisecond
	b := balancer.New("echo", balancer.Options{RetireWait: wait})
	defer b.Close()
	update(t, b, s)
	held := make(chan error, 1)
	go func() { held <- call(context.Background(), b, hold) }()
	waitActive(t, s, 1)
	start := time.Now()
	update(t, b, s2)
	if took := time.Since(start); took < wait || took > wait+5*time.Second {
		t.Errorf("Update took %s with a call held on the endpoint it dropped, want about %s", took, wait)
	}
	close(s.release)
	if err := <-held; err != nil {
		t.Errorf("the held call: %v", err)
	}
}

// waitAtLeast polls a server's counter until it reaches n.
func waitAtLeast(t *testing.T, s *server, what string, v *atomic.Int64, n int64) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for v.Load() < n {
		if time.Now().After(end) {
			t.Fatalf("endpoint %s: %s %d after 10s, want %d", s.addr, what, v.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitActive(t *testing.T, s *server, n int64) {
	t.Helper()
	waitAtLeast(t, s, "calls in flight", &s.active, n)
}

func waitCalls(t *testing.T, s *server, n int64) {
	t.Helper()
	waitAtLeast(t, s, "calls received", &s.calls, n)
}

func waitClosed(t *testing.T, name string, s *server) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for s.closes.Load() == 0 {
		if time.Now().After(end) {
			t.Errorf("%s's connection not closed after it left the set", name)
			return
		}
		time.Sleep(time.Millisecond)
	}
	if n := s.closes.Load(); n != 1 {
		t.Errorf("%s's connection closed %d times", name, n)
	}
	if n := s.early.Load(); n != 0 {
		t.Errorf("%s's connection closed while it handled a call", name)
	}
}

// TestDeadEndpoint checks that an endpoint nobody serves fails the calls
// that fall to it, and only those.
func TestDeadEndpoint(t *testing.T) {
	for _, tr := range networkTransports(t) {
		t.Run(tr.Name(), func(t *testing.T) {
			live := []*server{startServer(t, tr), startServer(t, tr)}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			dead := &server{addr: lis.Addr().String(), tr: tr}
			_ = lis.Close()

			b := balancer.New("echo", balancer.Options{})
			defer b.Close()
			update(t, b, live[0], dead, live[1])
			const calls = 30
			failed := 0
			for range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := call(ctx, b, "hi")
				cancel()
				if err != nil {
					failed++
					if code := status.Code(err); code != codes.Unavailable {
						t.Errorf("call to the dead endpoint: %v (code %s), want Unavailable", err, code)
					}
				}
			}
			// The first call that finds it dead takes it out of the
			// choice; its probes keep failing, so it stays out.
			if failed > 1 {
				t.Errorf("%d calls failed, want at most the one that found the endpoint dead", failed)
			}
			if got := live[0].calls.Load() + live[1].calls.Load(); got != int64(calls-failed) {
				t.Errorf("live endpoints served %d calls, want %d", got, calls-failed)
			}
			for i, s := range live {
				if got := s.calls.Load(); got < calls/2-1 || got > calls/2+1 {
					t.Errorf("live endpoint %d served %d calls, want about %d", i, got, calls/2)
				}
			}
		})
	}
}

// TestEmptyAndClosed checks the errors of a set with no endpoint, of a bad
// update and of a closed balancer.
func TestEmptyAndClosed(t *testing.T) {
	tr, err := transport.Lookup("grpc")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, tr)
	b := balancer.New("echo", balancer.Options{})
	ctx := context.Background()
	if err := call(ctx, b, "hi"); status.Code(err) != codes.Unavailable {
		t.Errorf("call with no endpoints: %v, want Unavailable", err)
	}
	update(t, b, s)
	if err := b.Update(addresses(s, s)); err == nil {
		t.Error("update listing an endpoint twice succeeded")
	}
	if err := call(ctx, b, "hi"); err != nil {
		t.Errorf("call after a refused update: %v", err)
	}
	update(t, b)
	if err := call(ctx, b, "hi"); status.Code(err) != codes.Unavailable {
		t.Errorf("call after emptying the set: %v, want Unavailable", err)
	}
	waitClosed(t, "the dropped endpoint", s)
	update(t, b, s)
	_ = b.Close()
	if err := call(ctx, b, "hi"); status.Code(err) != codes.Unavailable {
		t.Errorf("call after Close: %v, want Unavailable", err)
	}
	if err := b.Update(addresses(s)); err == nil {
		t.Error("update after Close succeeded")
	}
}

// leastOutstanding is the kind of picker the seam is for: it reads each
// SubConn's live state at every pick.
type leastOutstanding struct{ subConns []*balancer.SubConn }

func (l *leastOutstanding) Build(subConns []*balancer.SubConn) balancer.Picker {
	l.subConns = subConns
	return l
}

func (l *leastOutstanding) Pick(balancer.PickInfo) (*balancer.SubConn, error) {
	best := l.subConns[0]
	for _, sc := range l.subConns[1:] {
		if sc.Outstanding() < best.Outstanding() {
			best = sc
		}
	}
	return best, nil
}

// TestPickerSeesState checks that a picker sees calls outstanding and
// connectivity per endpoint.
func TestPickerSeesState(t *testing.T) {
	tr, err := transport.Lookup("http")
	if err != nil {
		t.Fatal(err)
	}
	ss := []*server{startServer(t, tr), startServer(t, tr)}
	lo := &leastOutstanding{}
	b := balancer.New("echo", balancer.Options{Picker: lo})
	defer b.Close()
	update(t, b, ss...)
	for i, sc := range lo.subConns {
		if st := sc.State(); st != connectivity.Idle {
			t.Errorf("endpoint %d is %s before any call, want IDLE", i, st)
		}
	}
	// Two held calls at once: the second must go where the first is not.
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(context.Background(), b, hold); err != nil {
				t.Error(err)
			}
		}()
		end := time.Now().Add(5 * time.Second)
		for ss[0].active.Load()+ss[1].active.Load() <= int64(i) && time.Now().Before(end) {
			time.Sleep(time.Millisecond)
		}
	}
	for i, sc := range lo.subConns {
		if n := sc.Outstanding(); n != 1 {
			t.Errorf("endpoint %d has %d calls outstanding, want 1", i, n)
		}
	}
	close(ss[0].release)
	close(ss[1].release)
	wg.Wait()
	for i, s := range ss {
		if n := s.calls.Load(); n != 1 {
			t.Errorf("endpoint %d served %d calls, want 1", i, n)
		}
		if st := lo.subConns[i].State(); st != connectivity.Ready {
			t.Errorf("endpoint %d is %s after a call, want READY", i, st)
		}
		if n := lo.subConns[i].Outstanding(); n != 0 {
			t.Errorf("endpoint %d has %d calls outstanding after they returned", i, n)
		}
	}
	update(t, b, ss[0])
	if st := lo.subConns[0].State(); st != connectivity.Ready {
		t.Errorf("endpoint kept across an update is %s, want READY", st)
	}
}
