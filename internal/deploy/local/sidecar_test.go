package local_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
	chainpb "github.com/svclab/svclab/proto/chain"
)

// probeApp is a two-component app for the sidecar tests: "front" passes
// the metadata it receives on to "back", which answers with the metadata
// and whether a deadline arrived, so a test sees what crossed two proxy
// legs (client → front's sidecar → front → front's sidecar → back's
// sidecar → back).
const probeApp = "meshprobe"

func init() {
	runtime.Register(&runtime.App{
		Name:      probeApp,
		Summary:   "test: reports the metadata and deadline that reach its second component",
		NewConfig: func() runtime.Config { return &probeConfig{} },
	})
}

type probeConfig struct{}

func (*probeConfig) Validate() error { return nil }
func (*probeConfig) Entry() string   { return "front" }
func (*probeConfig) Requests() []runtime.Request {
	return []runtime.Request{{
		Name: "probe", Method: chainpb.Hop_Call_FullMethodName,
		Message:     &chainpb.CallRequest{},
		NewResponse: func() proto.Message { return new(chainpb.CallResponse) },
	}}
}

func (*probeConfig) Components() []runtime.Component {
	return []runtime.Component{
		{Name: "front", Service: &chainpb.Hop_ServiceDesc, Deps: []string{"back"},
			New: func(_ context.Context, deps runtime.Deps) (any, error) {
				return &probeHop{next: chainpb.NewHopClient(deps.Conn("back"))}, nil
			}},
		{Name: "back", Service: &chainpb.Hop_ServiceDesc,
			New: func(context.Context, runtime.Deps) (any, error) { return &probeHop{}, nil }},
	}
}

type probeHop struct {
	chainpb.UnimplementedHopServer
	next chainpb.HopClient
}

func (h *probeHop) Call(ctx context.Context, in *chainpb.CallRequest) (*chainpb.CallResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if h.next != nil {
		out := metadata.MD{}
		for _, k := range []string{"x-probe", "traceparent"} {
			if v := md.Get(k); len(v) > 0 {
				out[k] = v
			}
		}
		return h.next.Call(metadata.NewOutgoingContext(ctx, out), in)
	}
	_, hasDeadline := ctx.Deadline()
	var parts []string
	for _, k := range []string{"x-probe", "traceparent"} {
		parts = append(parts, k+"="+strings.Join(md.Get(k), ","))
	}
	sort.Strings(parts)
	parts = append(parts, fmt.Sprintf("deadline=%t", hasDeadline))
	return &chainpb.CallResponse{Text: strings.Join(parts, ";")}, nil
}

// proxyOrSkip skips the test when the proxy program is not installed.
func proxyOrSkip(t *testing.T, name string) {
	t.Helper()
	k, err := sidecar.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Binary(); err != nil {
		t.Skipf("sidecar %s: %v", name, err)
	}
}

// TestSidecars deploys a 3-hop chain, split, with each proxy program in
// sidecar mode over every transport it carries, and in node mode over
// grpc and http; and checks answers (the large payload too), deadlines and
// metadata across the proxies, and that every proxy is a sampled process
// of the deployment that Stop ends.
func TestSidecars(t *testing.T) {
	t.Parallel()
	for _, sc := range []string{spec.SidecarEnvoy, spec.SidecarNginx, spec.SidecarHAProxy} {
		for _, tr := range []string{"grpc", "http", "netrpc", "protorpc"} {
			modes := []string{spec.ProxyModeSidecar}
			if tr == "grpc" || tr == "http" {
				modes = append(modes, spec.ProxyModeNode)
			}
			for _, mode := range modes {
				t.Run(sc+"/"+tr+"/"+mode, func(t *testing.T) {
					proxyOrSkip(t, sc)
					testSidecar(t, sc, tr, mode)
				})
			}
		}
	}
}

func testSidecar(t *testing.T, sc, tr, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := resolve(t, fmt.Sprintf("[app]\nname = \"chain\"\nhops = 3\n[deploy]\ntransport = %q\nplacement = \"split\"\nsidecar = %q\nproxy_mode = %q\n", tr, sc, mode))
	d, err := localDeployer(t).Deploy(ctx, p, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = d.Stop(context.Background())
		}
	}()

	// Hosts first, in group order; then the proxies.
	procs := d.Processes()
	wantProxies := len(p.Groups)
	if mode == spec.ProxyModeNode {
		wantProxies = 1
	}
	if len(procs) != len(p.Groups)+wantProxies {
		t.Fatalf("%d processes, want %d hosts and %d proxies", len(procs), len(p.Groups), wantProxies)
	}
	for i, proc := range procs[len(p.Groups):] {
		info := proc.Info()
		wantRole, wantName := deploy.RoleSidecar, p.Groups[min(i, len(p.Groups)-1)].Name+"."+sc
		if mode == spec.ProxyModeNode {
			wantRole, wantName = deploy.RoleNodeProxy, "node."+sc
		}
		if info.Role != wantRole || info.Name != wantName || !alive(info.PID) {
			t.Errorf("proxy %d is %+v, want a live %s named %s", i, info, wantRole, wantName)
		}
		u, err := proc.Resources().Sample(ctx)
		if err != nil || u.RSSBytes < 1<<20 {
			t.Errorf("%s: resources %+v, %v; want the RSS of a running proxy", info.Name, u, err)
		}
	}
	// The client reaches the entry through its proxy, not the host.
	for c, ep := range procs[p.EntryGroup()].Listeners() {
		if c != "gateway" && ep.Addr == d.Entry().Addr {
			t.Errorf("entry %s is the host's own listener, not its sidecar's", d.Entry())
		}
	}

	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatalf("dial entry: %v", err)
	}
	defer conn.Close()
	for _, r := range p.Requests() {
		if _, err := r.Invoke(ctx, conn); err != nil {
			t.Errorf("%s over %s: %v", r.Name, d.Entry(), err)
		}
	}
	for range 3 { // over reused connections too
		if err := callLarge(ctx, conn, 3); err != nil {
			t.Fatal(err)
		}
	}
	if tr == "grpc" && mode == spec.ProxyModeSidecar {
		// Concurrent calls on one connection, past nginx's default of
		// 1,000 requests per connection. (The failures nginx's defaults
		// caused under overload, when every stream in flight held an
		// upstream connection, need a loaded machine to show.)
		small := p.Requests()[0]
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 80 {
					if _, err := small.Invoke(ctx, conn); err != nil && failed.Add(1) == 1 {
						t.Errorf("concurrent calls on one connection: %v", err)
					}
				}
			}()
		}
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Errorf("%d of 1,280 concurrent calls on one connection failed", n)
		}
	}
	checkDeadline(t, d, "chain", conn)
	checkProbe(t, ctx, tr, sc, mode)

	stopped = true
	if err := d.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	for _, proc := range procs {
		if alive(proc.Info().PID) {
			t.Errorf("%s still alive after Stop", proc.Info().Name)
		}
	}
	if left := deploymentProcs(d.ID()); len(left) > 0 {
		t.Errorf("processes of the deployment left after Stop: %v", left)
	}
}

// checkProbe deploys the probe app with the same proxies and checks that
// metadata and the deadline reach its second component.
func checkProbe(t *testing.T, ctx context.Context, tr, sc, mode string) {
	t.Helper()
	p := resolve(t, fmt.Sprintf("[app]\nname = %q\n[deploy]\ntransport = %q\nplacement = \"split\"\nsidecar = %q\nproxy_mode = %q\n", probeApp, tr, sc, mode))
	d, err := localDeployer(t).Deploy(ctx, p, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy %s: %v", probeApp, err)
	}
	defer func() { _ = d.Stop(context.Background()) }()
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "x-probe", "sidecar-"+sc, "traceparent", tp), 10*time.Second)
	defer cancel()
	var resp chainpb.CallResponse
	if err := conn.Invoke(cctx, chainpb.Hop_Call_FullMethodName, &chainpb.CallRequest{}, &resp); err != nil {
		t.Fatalf("probe: %v", err)
	}
	want := "traceparent=" + tp + ";x-probe=sidecar-" + sc + ";deadline=true"
	if got := resp.GetText(); got != want {
		t.Errorf("probe across %s %s (%s) got %q, want %q", sc, mode, tr, got, want)
	}
}

// TestSidecarNoOrphans kills `svclab up` of a deployment with Envoy
// sidecars (-9, and SIGTERM): no host and no proxy outlives it.
func TestSidecarNoOrphans(t *testing.T) {
	proxyOrSkip(t, spec.SidecarEnvoy)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			testNoOrphans(t, sig, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\nsidecar = \"envoy\"\n", 6)
		})
	}
}

// TestSidecarMTLS is TestMTLS with the sidecars doing mutual TLS between
// each other, the hosts plaintext behind them: the same answers, deadline
// and refusals, by svclab's clients, openssl s_client and curl.
func TestSidecarMTLS(t *testing.T) {
	t.Parallel()
	for _, sc := range []string{spec.SidecarEnvoy, spec.SidecarNginx, spec.SidecarHAProxy} {
		for _, tr := range []string{"grpc", "http", "netrpc", "protorpc"} {
			t.Run(sc+"/"+tr, func(t *testing.T) {
				proxyOrSkip(t, sc)
				testMTLS(t, tr, sc)
			})
		}
	}
}

// TestSidecarSpecErrors checks that a missing proxy program is one error
// naming the key and line, from deploy.Resolve, before anything starts.
func TestSidecarSpecErrors(t *testing.T) {
	t.Setenv("SVCLAB_HAPROXY", "/nonexistent/haproxy")
	s, err := spec.Load(writeSpec(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\nsidecar = \"haproxy\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = deploy.Resolve(s)
	if err == nil || !strings.Contains(err.Error(), "spec.toml:5: deploy.sidecar: SVCLAB_HAPROXY=/nonexistent/haproxy is not an executable file") {
		t.Errorf("Resolve with a missing haproxy: %v", err)
	}
	if !slices.Contains(sidecar.Names(), "haproxy") {
		t.Errorf("haproxy is not a registered sidecar: %v", sidecar.Names())
	}
}
