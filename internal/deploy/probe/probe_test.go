package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestProbe(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	t.Cleanup(web.Close)
	h2c := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "HTTP/2 only", http.StatusHTTPVersionNotSupported)
		}
	}))
	h2c.Config.Protocols = new(http.Protocols)
	h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	h2c.Start()
	t.Cleanup(h2c.Close)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("cart", healthpb.HealthCheckResponse_NOT_SERVING)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	closed.Close()
	webAddr, h2cAddr, grpcAddr := strings.TrimPrefix(web.URL, "http://"), strings.TrimPrefix(h2c.URL, "http://"), lis.Addr().String()

	for _, tc := range []struct {
		name, what string
		p          Probe
		want       string // "" passes; else in the error
	}{
		{"http path", "GET /healthz", Probe{Protocol: ProtoHTTP, Addr: webAddr, Check: "/healthz"}, ""},
		{"http 500", "GET /other", Probe{Protocol: ProtoHTTP, Addr: webAddr, Check: "/other"}, "answered 500 Internal Server Error"},
		{"h2c", "GET /", Probe{Protocol: ProtoH2C, Addr: h2cAddr, Check: "/"}, ""},
		{"grpc server", `grpc.health.v1 of service ""`, Probe{Protocol: ProtoGRPC, Addr: grpcAddr, Check: GRPC}, ""},
		{"grpc service not serving", `grpc.health.v1 of service "cart"`, Probe{Protocol: ProtoGRPC, Addr: grpcAddr, Check: "cart"}, "status NOT_SERVING"},
		{"tcp", "connect to " + grpcAddr, Probe{Addr: grpcAddr, Check: TCP}, ""},
		{"tcp refused", "connect to " + nobody, Probe{Addr: nobody, Check: TCP}, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.String(); got != tc.what {
				t.Errorf("String() = %q, want %q", got, tc.what)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitFor(tc.want))
			defer cancel()
			err := tc.p.Wait(ctx)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Wait: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Wait: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// waitFor is how long a case waits: one that fails waits to the end, so
// it leaves room for checks after a first one starved on a busy machine.
func waitFor(want string) time.Duration {
	if want == "" {
		return 2*PollEvery + time.Second
	}
	return 2*PollEvery + 2*time.Second
}

// TestProbeUnixAndDial: each check reaches a server on a unix socket, and
// a probe with a Dial of its own opens its connections through it alone
// (the netns deployer's, from the namespace that reaches the machines).
func TestProbeUnixAndDial(t *testing.T) {
	dir := t.TempDir()
	web, err := net.Listen("unix", filepath.Join(dir, "web.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	})}
	go func() { _ = srv.Serve(web) }()
	t.Cleanup(func() { _ = srv.Close() })
	rpc, err := net.Listen("unix", filepath.Join(dir, "grpc.sock"))
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(rpc) }()
	t.Cleanup(gs.Stop)
	webPath, rpcPath := web.Addr().String(), rpc.Addr().String()
	for _, tc := range []struct {
		name string
		p    Probe
		want string
	}{
		{"http path", Probe{Protocol: ProtoHTTP, Network: "unix", Addr: webPath, Check: "/healthz"}, ""},
		{"http 500", Probe{Protocol: ProtoHTTP, Network: "unix", Addr: webPath, Check: "/other"}, "answered 500"},
		{"grpc", Probe{Protocol: ProtoGRPC, Network: "unix", Addr: rpcPath, Check: GRPC}, ""},
		{"tcp", Probe{Network: "unix", Addr: webPath, Check: TCP}, ""},
		{"no socket", Probe{Network: "unix", Addr: filepath.Join(dir, "none.sock"), Check: TCP}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, own := range []bool{false, true} {
				p, dials := tc.p, 0
				if own {
					// The address a client names is not the socket: the
					// probe's Dial alone knows where the server is.
					p.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
						dials++
						var d net.Dialer
						return d.DialContext(ctx, network, addr)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), waitFor(tc.want))
				err := p.Wait(ctx)
				cancel()
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("own dial %v: Wait: %v", own, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("own dial %v: Wait: %v, want an error saying %q", own, err, tc.want)
				}
				if own && dials == 0 {
					t.Errorf("the probe never called its Dial")
				}
			}
		})
	}
}

// TestWaitKeepsTheLastAnswer: a check that the deadline cuts says only
// that time ran out, so Wait reports the check before it, which was
// answered.
func TestWaitKeepsTheLastAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer srv.Close()
	var dials atomic.Int32 // the transport dials on goroutines of its own
	p := Probe{Protocol: ProtoHTTP, Addr: srv.Listener.Addr().String(), Check: "/healthz",
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) > 1 {
				// The second check hangs until the deadline cuts it.
				<-ctx.Done()
				return nil, ctx.Err()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	ctx, cancel := context.WithTimeout(context.Background(), PollEvery+300*time.Millisecond)
	defer cancel()
	err := p.Wait(ctx)
	if n := dials.Load(); n < 2 {
		t.Fatalf("%d dials, want the second check to have begun", n)
	}
	if err == nil || !strings.Contains(err.Error(), "answered 500") {
		t.Errorf("Wait: %v, want the first check's answer (500), not the deadline's cut", err)
	}
}

// TestWaitAnswerOverTimeout: a check that ran out of its own second
// while Wait's time went on (a starved process, a hung server) does not
// hide the answer a check before it got.
func TestWaitAnswerOverTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer srv.Close()
	var dials atomic.Int32
	p := Probe{Protocol: ProtoHTTP, Addr: srv.Listener.Addr().String(), Check: "/healthz",
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) > 1 {
				<-ctx.Done() // the check's own second ends first
				return nil, ctx.Err()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	// Long enough that the second check ends by its own second, not by
	// this deadline, and a third begins.
	ctx, cancel := context.WithTimeout(context.Background(), 2*PollEvery+1300*time.Millisecond)
	defer cancel()
	err := p.Wait(ctx)
	if n := dials.Load(); n < 3 {
		t.Fatalf("%d dials, want a third check begun after the second timed out", n)
	}
	if err == nil || !strings.Contains(err.Error(), "answered 500") {
		t.Errorf("Wait: %v, want the first check's answer (500), not a timeout", err)
	}
}
