package conformance

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	selectapp "github.com/svclab/svclab/apps/select"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
	selectorpb "github.com/svclab/svclab/proto/selector"
)

// TestBadConfig checks that every implementation refuses a config it
// cannot use as the host protocol says: exit status 1 and a message naming
// what is wrong, serving nothing.
func TestBadConfig(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	base := func() *hostv1.HostConfig { return hostConfig(selectapp.Name, selectapp.Selector, "grpc", nil) }
	with := func(change func(c *hostv1.HostConfig)) string {
		c := base()
		change(c)
		js, err := runtime.EncodeHostConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(js)
	}
	cases := []struct {
		name   string
		config string
		env    []string
		want   string // in the output
	}{
		{"unknown app", with(func(c *hostv1.HostConfig) { c.App = "nope" }), nil, `nope`},
		{"unknown config field", strings.Replace(with(func(*hostv1.HostConfig) {}), "{", `{"bogusField":1,`, 1), nil, "bogusField"},
		{"bad app value", with(func(c *hostv1.HostConfig) { c.ConfigJson = `{"size":"huge"}` }), nil, "size"},
		{"unknown app key", with(func(c *hostv1.HostConfig) { c.ConfigJson = `{"sise":"std"}` }), nil, "sise"},
		{"unknown component", with(func(c *hostv1.HostConfig) {
			c.Components, c.Group = []string{"nope"}, "nope"
			c.Listeners = map[string]*hostv1.Listener{"nope": c.Listeners[selectapp.Selector]}
		}), nil, "nope"},
		{"missing peer", with(func(c *hostv1.HostConfig) {
			c.Components, c.Group = []string{selectapp.Frontend}, selectapp.Frontend
			c.Listeners = map[string]*hostv1.Listener{selectapp.Frontend: c.Listeners[selectapp.Selector]}
		}), nil, selectapp.Selector},
		{"component failing at start", with(func(*hostv1.HostConfig) {}), []string{runtime.FailComponentEnv + "=" + selectapp.Selector}, selectapp.Selector},
		{"unknown balancer", with(func(c *hostv1.HostConfig) {
			c.TransportOptions = &hostv1.TransportOptions{Balancer: "random_walk"}
		}), nil, `unknown balancer "random_walk"`},
		{"grpc port in use", with(func(c *hostv1.HostConfig) {
			c.Listeners[selectapp.Selector].Endpoint.Addr = busy.Addr().String()
		}), nil, fmt.Sprint(busyPort)},
		{"http port in use", with(func(c *hostv1.HostConfig) {
			c.Transport = "http"
			c.Listeners[selectapp.Selector].Endpoint = &hostv1.Endpoint{Transport: "http", Network: "tcp", Addr: busy.Addr().String()}
		}), nil, fmt.Sprint(busyPort)},
	}
	for _, im := range impls {
		t.Run(im.lang, func(t *testing.T) {
			argv := im.argv(t)
			var wg sync.WaitGroup
			results := make([]string, len(cases))
			for i, c := range cases {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = badConfigRun(argv, c.config, c.env, c.want)
				}()
			}
			wg.Wait()
			for i, c := range cases {
				if results[i] != "" {
					t.Errorf("%s: %s", c.name, results[i])
				}
			}
		})
	}
}

// badConfigRun starts a host with a config it must refuse; it returns what
// went wrong, or "".
func badConfigRun(argv []string, config string, env []string, want string) string {
	p, err := spawnRaw(argv, config, env)
	if err != nil {
		return err.Error()
	}
	select {
	case <-p.done:
	case <-time.After(readyTimeout):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Sprintf("still running after %s; output:\n%s", readyTimeout, p.out)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 {
		return fmt.Sprintf("exit status %d, want 1; output:\n%s", code, p.out)
	}
	if strings.Contains(p.out.String(), runtime.ReadyMarker) {
		return fmt.Sprintf("wrote the ready line before failing; output:\n%s", p.out)
	}
	if !strings.Contains(p.out.String(), want) {
		return fmt.Sprintf("output does not mention %q:\n%s", want, p.out)
	}
	return ""
}

// TestControl drives each implementation's Control service as a deployer
// does: UpdatePeers moves a frontend's calls to a new endpoint set and
// refuses a bad one whole, Drain makes it refuse calls and report
// NOT_SERVING, Stop makes it exit with status 0.
func TestControl(t *testing.T) {
	for _, im := range impls {
		t.Run(im.lang, func(t *testing.T) {
			argv := im.argv(t)
			for _, tr := range transports {
				t.Run(tr, func(t *testing.T) { controlCase(t, im, argv, tr) })
			}
		})
	}
}

func controlCase(t *testing.T, im impl, argv []string, tr string) {
	a, b := startRecorder(t, tr), startRecorder(t, tr)
	sock := filepath.Join(t.TempDir(), "control.sock")
	cfg := hostConfig(selectapp.Name, selectapp.Frontend, tr, map[string]string{selectapp.Selector: a.addr})
	cfg.Control = &hostv1.Listener{Endpoint: &hostv1.Endpoint{Transport: "grpc", Network: "unix", Addr: sock}}
	p := startHost(t, im, argv, cfg)
	conn := dial(t, tr, p.addrs[selectapp.Frontend])
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctl := hostv1.NewControlClient(cc)

	call := func() error {
		return conn.Invoke(ctxTimeout(t, callTimeout), selectorpb.Frontend_Select_FullMethodName,
			&selectorpb.SelectRequest{Values: []int32{4, 5, 6}}, new(selectorpb.SelectResponse))
	}
	wantAt := func(when string, want, other *recorder) {
		t.Helper()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if want.take().method == "" || other.take().method != "" {
			t.Errorf("%s: the call did not go to the endpoint set in force", when)
		}
	}
	set := func(addrs ...string) *hostv1.EndpointSet {
		s := &hostv1.EndpointSet{}
		for _, ad := range addrs {
			s.Endpoints = append(s.Endpoints, &hostv1.Endpoint{Transport: tr, Network: "tcp", Addr: ad})
		}
		return s
	}
	update := func(peers map[string]*hostv1.EndpointSet) error {
		_, err := ctl.UpdatePeers(ctxTimeout(t, callTimeout), &hostv1.UpdatePeersRequest{Peers: peers})
		return err
	}

	wantAt("before any update", a, b)
	if err := update(map[string]*hostv1.EndpointSet{selectapp.Selector: set(b.addr)}); err != nil {
		t.Fatalf("UpdatePeers to the second recorder: %v", err)
	}
	wantAt("after UpdatePeers", b, a)

	bad := set(a.addr)
	bad.Endpoints = append(bad.Endpoints, &hostv1.Endpoint{Transport: "carrier-pigeon", Network: "tcp", Addr: a.addr})
	for name, peers := range map[string]map[string]*hostv1.EndpointSet{
		"a peer the group does not call": {"nope": set(a.addr)},
		"an unknown transport":           {selectapp.Selector: bad},
		"an endpoint listed twice":       {selectapp.Selector: set(a.addr, a.addr)},
	} {
		wantStatus(t, "UpdatePeers with "+name, update(peers), codes.InvalidArgument, "")
	}
	wantAt("after refused updates", b, a)

	if err := update(map[string]*hostv1.EndpointSet{selectapp.Selector: set()}); err != nil {
		t.Fatalf("UpdatePeers to an empty set: %v", err)
	}
	wantStatus(t, "a call to an empty set", call(), codes.Unavailable, "")

	if _, err := ctl.Drain(ctxTimeout(t, callTimeout), &hostv1.DrainRequest{}); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	wantStatus(t, "a call after Drain", call(), codes.Unavailable, "")
	h, err := healthpb.NewHealthClient(conn).Check(ctxTimeout(t, callTimeout), &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after Drain: %v, %v; want NOT_SERVING", h, err)
	}

	if _, err := ctl.Stop(ctxTimeout(t, callTimeout), &hostv1.StopRequest{}); err != nil {
		t.Errorf("Stop: %v", err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("after Stop: %v, want exit status 0; output:\n%s", p.err, p.out)
		}
	case <-time.After(stopTimeout):
		t.Errorf("still running %s after Stop; output:\n%s", stopTimeout, p.out)
	}
}

// TestUnixSockets serves a worker on a unix socket over each transport, as
// `deploy.network = "unix"` asks, and calls it there.
func TestUnixSockets(t *testing.T) {
	for _, im := range impls {
		t.Run(im.lang, func(t *testing.T) {
			argv := im.argv(t)
			for _, tr := range transports {
				t.Run(tr, func(t *testing.T) {
					sock := filepath.Join(t.TempDir(), "selector.sock")
					cfg := hostConfig(selectapp.Name, selectapp.Selector, tr, nil)
					cfg.Listeners[selectapp.Selector].Endpoint.Network = "unix"
					cfg.Listeners[selectapp.Selector].Endpoint.Addr = sock
					p := startHost(t, im, argv, cfg)
					want := tr + "+unix://" + sock
					if line, _ := p.out.waitFor(runtime.ReadyMarker, time.Second, p.done); !strings.Contains(line, want) {
						t.Errorf("ready line %q does not name %s", line, want)
					}
					trp, err := transport.Lookup(tr)
					if err != nil {
						t.Fatal(err)
					}
					conn, err := trp.Dial(context.Background(), "unix", sock, transport.DialOptions{})
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
					r := (&selectapp.Config{Size: selectapp.Std, Seed: 3}).Requests()[0]
					r.Method = selectorpb.Selector_Select_FullMethodName
					if _, err := r.Invoke(ctxTimeout(t, callTimeout), conn); err != nil {
						t.Errorf("select over %s: %v", want, err)
					}
					h, err := healthpb.NewHealthClient(conn).Check(ctxTimeout(t, callTimeout), &healthpb.HealthCheckRequest{})
					if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
						t.Errorf("health over %s: %v, %v", want, h, err)
					}
				})
			}
		})
	}
}
