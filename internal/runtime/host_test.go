package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/apps/chain"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	chainpb "github.com/svclab/svclab/proto/chain"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// runningHost is a host run in this process, as `svclab host` runs one,
// with a middleware that counts the calls its listeners take.
type runningHost struct {
	name   string
	calls  atomic.Int64 // calls handled
	active atomic.Int64 // calls being handled
	done   chan error
	cancel context.CancelFunc
}

func startHost(t *testing.T, name string, cfg *hostv1.HostConfig) *runningHost {
	t.Helper()
	h := &runningHost{name: name, done: make(chan error, 1)}
	count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		h.calls.Add(1)
		h.active.Add(1)
		defer h.active.Add(-1)
		return next(ctx, req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		h.done <- runtime.RunHost(ctx, cfg, runtime.Middleware{Server: []grpc.UnaryServerInterceptor{count}})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			t.Errorf("host %s still running 5s after its context ended", name)
		}
	})
	// Its sockets exist once it is built; calls queue until it serves.
	for _, l := range append(listenersOf(cfg), cfg.GetControl()) {
		waitFile(t, h, l.GetEndpoint().GetAddr())
	}
	return h
}

func listenersOf(cfg *hostv1.HostConfig) []*hostv1.Listener {
	var ls []*hostv1.Listener
	for _, l := range cfg.GetListeners() {
		ls = append(ls, l)
	}
	return ls
}

func waitFile(t *testing.T, h *runningHost, path string) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-h.done:
			t.Fatalf("host %s ended before it listened on %s: %v", h.name, path, err)
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("host %s not listening on %s after 10s", h.name, path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exited waits for the host to end by itself and returns how it ended.
func (h *runningHost) exited(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("host %s still running 10s after it was stopped", h.name)
		return nil
	}
}

func waitActive(t *testing.T, h *runningHost) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for h.active.Load() == 0 {
		if time.Now().After(end) {
			t.Fatalf("no call in flight on host %s after 10s", h.name)
		}
		time.Sleep(time.Millisecond)
	}
}

func controlClient(t *testing.T, cfg *hostv1.HostConfig) hostv1.ControlClient {
	t.Helper()
	cc, err := grpc.NewClient("unix://"+cfg.GetControl().GetEndpoint().GetAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return hostv1.NewControlClient(cc)
}

// TestHostControl runs a two-hop chain as three hosts in this process, hop1
// calling two hosts of hop2, and drives hop1's peers, hop2's drain and both
// stops through the control service, on every transport.
func TestHostControl(t *testing.T) {
	for _, trName := range transport.Names() {
		t.Run(trName, func(t *testing.T) {
			testHostControl(t, trName)
		})
	}
}

func testHostControl(t *testing.T, trName string) {
	dir, err := os.MkdirTemp("", "svclab") // short: a socket path holds 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ep := func(name string) *hostv1.Endpoint {
		return &hostv1.Endpoint{Transport: trName, Network: "unix", Addr: filepath.Join(dir, name+".sock")}
	}
	set := func(names ...string) *hostv1.EndpointSet {
		s := &hostv1.EndpointSet{}
		for _, n := range names {
			s.Endpoints = append(s.Endpoints, ep(n))
		}
		return s
	}
	conf := &chain.Config{Hops: 2, Payload: chain.Small}
	base := func(group string) *hostv1.HostConfig {
		return &hostv1.HostConfig{
			Deployment: "test", App: chain.Name, ConfigJson: `{"hops":2,"payload":"small"}`, Transport: trName,
			Group: group, Components: []string{group}, Entry: "hop1",
			Listeners: map[string]*hostv1.Listener{group: {Endpoint: ep(group + "-" + trName)}},
			Control:   &hostv1.Listener{Endpoint: &hostv1.Endpoint{Transport: "grpc", Network: "unix", Addr: filepath.Join(dir, group+"-control.sock")}},
		}
	}
	hop2 := func(name string) *hostv1.HostConfig {
		c := base("hop2")
		c.Listeners["hop2"].Endpoint = ep(name)
		c.Control.Endpoint.Addr = filepath.Join(dir, name+"-control.sock")
		return c
	}
	b1cfg, b2cfg := hop2("b1"), hop2("b2")
	acfg := base("hop1")
	acfg.Peers = map[string]*hostv1.EndpointSet{"hop2": set("b1")}
	b1, b2 := startHost(t, "b1", b1cfg), startHost(t, "b2", b2cfg)
	a := startHost(t, "a", acfg)
	actl, b1ctl, b2ctl := controlClient(t, acfg), controlClient(t, b1cfg), controlClient(t, b2cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := transport.Lookup(trName)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(cfg *hostv1.HostConfig) transport.Conn {
		l := listenersOf(cfg)[0].GetEndpoint()
		c, err := tr.Dial(ctx, l.GetNetwork(), l.GetAddr(), transport.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	entry := dial(acfg)
	req := conf.Requests()[0]
	calls := func(n int) {
		t.Helper()
		for range n {
			if _, err := req.Invoke(ctx, entry); err != nil {
				t.Fatalf("call through hop1: %v", err)
			}
		}
	}
	expect := func(when string, want1, want2 int64) {
		t.Helper()
		if got1, got2 := b1.calls.Load(), b2.calls.Load(); got1 != want1 || got2 != want2 {
			t.Fatalf("%s: hop2 hosts served %d and %d calls, want %d and %d", when, got1, got2, want1, want2)
		}
	}
	update := func(peers map[string]*hostv1.EndpointSet) error {
		_, err := actl.UpdatePeers(ctx, &hostv1.UpdatePeersRequest{Peers: peers})
		return err
	}

	calls(4)
	expect("one endpoint", 4, 0)
	if err := update(map[string]*hostv1.EndpointSet{"hop2": set("b1", "b2")}); err != nil {
		t.Fatal(err)
	}
	calls(8)
	expect("two endpoints, round robin", 8, 4)

	for name, peers := range map[string]map[string]*hostv1.EndpointSet{
		"a peer hop1 does not call": {"hop2": set("b1"), "hop9": set("b2")},
		"an unknown transport":      {"hop2": {Endpoints: []*hostv1.Endpoint{{Transport: "pigeon", Network: "tcp", Addr: "x"}}}},
		"an endpoint twice":         {"hop2": set("b2", "b2")},
	} {
		if err := update(peers); status.Code(err) != codes.InvalidArgument {
			t.Errorf("update with %s: %v, want InvalidArgument", name, err)
		}
	}
	calls(2)
	expect("after refused updates, still both", 9, 5)

	// Take b1 out of service gracefully: out of the set, then drained.
	if err := update(map[string]*hostv1.EndpointSet{"hop2": set("b2")}); err != nil {
		t.Fatal(err)
	}
	calls(4)
	expect("b1 out of the set", 9, 9)

	direct := dial(b1cfg)
	slow := make(chan error, 1)
	go func() {
		slow <- direct.Invoke(ctx, chainpb.Hop_Call_FullMethodName, &chainpb.CallRequest{SleepMicros: 300_000}, new(chainpb.CallResponse))
	}()
	waitActive(t, b1)
	if _, err := b1ctl.Drain(ctx, &hostv1.DrainRequest{}); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n := b1.active.Load(); n != 0 {
		t.Errorf("drain answered with %d calls in flight", n)
	}
	if err := <-slow; err != nil {
		t.Errorf("call in flight during a drain: %v", err)
	}
	err = direct.Invoke(ctx, chainpb.Hop_Call_FullMethodName, &chainpb.CallRequest{}, new(chainpb.CallResponse))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("call to a drained host: %v, want Unavailable", err)
	}
	resp, err := healthpb.NewHealthClient(direct).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health of a drained host: %v, %v; want NOT_SERVING", resp.GetStatus(), err)
	}
	if _, err := b1ctl.Stop(ctx, &hostv1.StopRequest{}); err != nil {
		t.Errorf("stop b1: %v", err)
	}
	if err := b1.exited(t); err != nil {
		t.Errorf("b1 stopped over the control channel returned %v, want nil", err)
	}

	// Stop b2 with a call in flight through hop1: the call completes.
	go func() {
		slow <- entry.Invoke(ctx, chainpb.Hop_Call_FullMethodName, &chainpb.CallRequest{SleepMicros: 300_000}, new(chainpb.CallResponse))
	}()
	waitActive(t, b2)
	if _, err := b2ctl.Stop(ctx, &hostv1.StopRequest{}); err != nil {
		t.Errorf("stop b2: %v", err)
	}
	if err := <-slow; err != nil {
		t.Errorf("call in flight when its host was stopped: %v", err)
	}
	if err := b2.exited(t); err != nil {
		t.Errorf("b2 stopped over the control channel returned %v, want nil", err)
	}

	// Cancelling a host's context (SIGTERM in a process) still stops it.
	a.cancel()
	if err := a.exited(t); err != nil {
		t.Errorf("hop1 host after its context ended: %v, want nil", err)
	}
}

// TestHostHTTPCodec checks that the host serves and dials with the codec its
// config names: each known codec answers over the http transport, and an
// unknown one stops the host with an error naming it.
func TestHostHTTPCodec(t *testing.T) {
	for _, tc := range []struct {
		codec   string
		wantErr bool
	}{
		{"", false}, {"fast", false}, {"protojson", false}, {"bogus", true},
	} {
		t.Run("codec="+tc.codec, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "svclab")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			ep := &hostv1.Endpoint{Transport: "http", Network: "unix", Addr: filepath.Join(dir, "hop1.sock")}
			cfg := &hostv1.HostConfig{
				Deployment: "test", App: chain.Name, ConfigJson: `{"hops":1,"payload":"small"}`, Transport: "http",
				Group: "hop1", Components: []string{"hop1"}, Entry: "hop1",
				Listeners:        map[string]*hostv1.Listener{"hop1": {Endpoint: ep}},
				TransportOptions: &hostv1.TransportOptions{HttpCodec: tc.codec},
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- runtime.RunHost(ctx, cfg, runtime.Middleware{}) }()
			if tc.wantErr {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "bogus") {
						t.Fatalf("host with codec %q ended with %v; want an error naming it", tc.codec, err)
					}
				case <-ctx.Done():
					t.Fatalf("host with codec %q still running", tc.codec)
				}
				return
			}
			tr, err := transport.Lookup("http")
			if err != nil {
				t.Fatal(err)
			}
			conn, err := tr.Dial(ctx, "unix", ep.GetAddr(), transport.DialOptions{Codec: tc.codec})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var resp *chainpb.CallResponse
			for {
				resp, err = chainpb.NewHopClient(conn).Call(ctx, &chainpb.CallRequest{})
				if err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(10 * time.Millisecond) // the listener may not be up yet
			}
			if err != nil {
				t.Fatalf("call over codec %q: %v", tc.codec, err)
			}
			if resp.GetText() == "" {
				t.Error("empty answer")
			}
			cancel()
			<-done
		})
	}
}
