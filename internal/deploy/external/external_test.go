package external

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

func parse(t *testing.T, src string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse(filepath.Join(t.TempDir(), "x.toml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestExpand(t *testing.T) {
	s := parse(t, `[deploy]
deployer = "external"
[deploy.external]
url = "http://127.0.0.1:1"
replicas = 3
ratio = 0.5
tls = false
name = "a b"
[load]
rate = 100.0
`)
	for _, tc := range []struct {
		argv []string
		want string
		err  string
	}{
		{argv: []string{"x", "{deploy.external.replicas}"}, want: "x 3"},
		{argv: []string{"--replicas={deploy.external.replicas}/{deploy.external.ratio}"}, want: "--replicas=3/0.5"},
		{argv: []string{"{deploy.external.tls}", "{deploy.external.name}", "{load.rate}"}, want: "false a b 100"},
		// Braces around anything but a dotted key stay as written.
		{argv: []string{`{"a": 1}`, "{x}", "{}"}, want: `{"a": 1} {x} {}`},
		{argv: []string{"x", "{deploy.external.replica}"}, err: `element 2: {deploy.external.replica} names no key of the spec (did you mean "replicas"?)`},
		{argv: []string{"{deploy.external}"}, err: "element 1: {deploy.external} is not a scalar"},
	} {
		got, err := expand(s, tc.argv)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.argv, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.argv, got, err, tc.want)
		}
	}
}

func TestKeysURL(t *testing.T) {
	for _, tc := range []struct {
		url, target, protocol, entry, err string
	}{
		{url: "http://127.0.0.1:8080/api?x=1", target: "http://127.0.0.1:8080/api?x=1", protocol: "http", entry: "127.0.0.1:8080"},
		{url: "h2c://localhost:9000/v1", target: "http://localhost:9000/v1", protocol: "h2c", entry: "localhost:9000"},
		{url: "grpc+tcp://127.0.0.1:50051", target: "127.0.0.1:50051", protocol: "grpc", entry: "127.0.0.1:50051"},
		{url: "grpc://[::1]:50051", target: "[::1]:50051", protocol: "grpc", entry: "[::1]:50051"},
		{url: "https://127.0.0.1:1", err: "plaintext servers only"},
		{url: "http://127.0.0.1", err: "needs a port"},
		{url: "grpc+tcp://127.0.0.1:1/a.B", err: "host:port only"},
		{url: "127.0.0.1:8080", err: "want a URL with a scheme"},
	} {
		s := parse(t, "[deploy.external]\nurl = \""+tc.url+"\"\n")
		k, err := KeysOf(s)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), "x.toml:2: deploy.external.url: ") || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q at deploy.external.url", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil || k.Target() != tc.target || k.Protocol() != tc.protocol || k.hostport != tc.entry {
			t.Errorf("%s: target %q protocol %q entry %q, %v; want %q %q %q", tc.url, k.Target(), k.Protocol(), k.hostport, err, tc.target, tc.protocol, tc.entry)
		}
	}
}

// TestSetupTimeout: a setup that runs past its timeout is ended, with
// what it printed, and so is what it forked that still holds its output.
func TestSetupTimeout(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	err := run(context.Background(), "setup", []string{"sh", "-c", "echo working; sleep 30"}, dir, 300*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") || !strings.Contains(err.Error(), "working") {
		t.Errorf("error %v, want the timeout and the output", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

// TestSetupLeavesItsServer: what setup starts in the background is the
// system's and keeps running; run returns as soon as setup exits.
func TestSetupLeavesItsServer(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	if err := run(context.Background(), "setup", []string{"sh", "-c", "sleep 30 & echo $! > pid"}, dir, 10*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("setup took %s: the background process held it", d)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	if _, err := os.Stat("/proc/" + pid); err != nil {
		t.Errorf("setup's background process %s is gone: %v", pid, err)
	}
	if n, err := strconv.Atoi(pid); err == nil {
		_ = syscall.Kill(n, syscall.SIGKILL)
	}
}

// TestReady: each kind of ready check against a real server: an HTTP
// path that answers 500 until the server turns healthy, h2c, and
// grpc.health.v1 whose status the test sets.
func TestReady(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		healthyAt := time.Now().Add(300 * time.Millisecond)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" || time.Now().Before(healthyAt) {
				w.WriteHeader(http.StatusInternalServerError)
			}
		})}
		go srv.Serve(l)
		defer srv.Close()
		k := &Keys{URL: "http://" + l.Addr().String(), Ready: "/healthz"}
		if err := k.parseURL(); err != nil {
			t.Fatal(err)
		}
		if err := waitReady(context.Background(), k, 5*time.Second); err != nil || time.Now().Before(healthyAt) {
			t.Errorf("ready %v before the server was healthy", err)
		}
		k.Ready = "/other"
		err = waitReady(context.Background(), k, 300*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "GET /other: answered 500") {
			t.Errorf("a path that answers 500: %v", err)
		}
	})
	t.Run("h2c", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var p http.Protocols
		p.SetUnencryptedHTTP2(true) // and no HTTP/1
		srv := &http.Server{Protocols: &p, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				w.WriteHeader(http.StatusHTTPVersionNotSupported)
			}
		})}
		go srv.Serve(l)
		defer srv.Close()
		k := &Keys{URL: "h2c://" + l.Addr().String(), Ready: "/"}
		if err := k.parseURL(); err != nil {
			t.Fatal(err)
		}
		if err := waitReady(context.Background(), k, 3*time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Run("grpc", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		hs := health.NewServer()
		hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		hs.SetServingStatus("shop.Cart", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
		go srv.Serve(l)
		defer srv.Stop()
		k := &Keys{URL: "grpc+tcp://" + l.Addr().String(), Ready: "grpc"}
		if err := k.parseURL(); err != nil {
			t.Fatal(err)
		}
		err = waitReady(context.Background(), k, 300*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "NOT_SERVING") {
			t.Errorf("a server not serving: %v", err)
		}
		k.Ready = "shop.Cart"
		if err := waitReady(context.Background(), k, 3*time.Second); err != nil {
			t.Errorf("service shop.Cart: %v", err)
		}
		hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		k.Ready = "grpc"
		if err := waitReady(context.Background(), k, 3*time.Second); err != nil {
			t.Errorf("the server: %v", err)
		}
	})
}

// `svclab up` describes an external system as what it is: where its entry
// is, without the groups, placement and gateway of a system svclab runs.
func TestDescribe(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"
	s := parse(t, "[deploy]\ndeployer = \"external\"\n[deploy.external]\nurl = \""+url+"\"\nready = \"/\"\n[load]\nrate = 10\n[load.request]\nmethod = \"GET\"\npath = \"/\"\n")
	topo, err := topology(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := deployer{}.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop(ctx)
	var b strings.Builder
	deploy.Describe(&b, d)
	out := b.String()
	for _, want := range []string{"a system svclab did not start (deployer external)", "entry:   " + url, "curl -s " + url} {
		if !strings.Contains(out, want) {
			t.Errorf("description lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"placement", "gateway", "component"} {
		if strings.Contains(out, not) {
			t.Errorf("description speaks of a %s:\n%s", not, out)
		}
	}
}

// TestFindWithinWaitsForExec: a process whose command line comes to hold
// the pattern only after a delay (a shell that execs its server later, as
// a setup's `server &` does) is found when the wait outlasts the delay,
// and not without a wait.
func TestFindWithinWaitsForExec(t *testing.T) {
	d := fmt.Sprintf("7.%d", time.Now().UnixNano()%1_000_000)
	pattern := "sleep " + d
	// The shell's own command line holds d, not the pattern.
	cmd := exec.Command("sh", "-c", `sleep 0.5; exec sleep "$1"`, "sh", d)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	named := []Named{{Pattern: pattern}}
	if _, err := findWithin(context.Background(), named, 0); !errors.Is(err, errNoMatch) {
		t.Fatalf("without a wait, before the exec: %v, want %v", err, errNoMatch)
	}
	procs, err := findWithin(context.Background(), named, processWait)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 1 || procs[0].info.PID != cmd.Process.Pid {
		t.Fatalf("found %d processes, want the shell's pid %d", len(procs), cmd.Process.Pid)
	}
}

// TestCheckAllAtOnce: deploy.Resolve reports every mistake of an
// external spec in one pass, each at its file, line and key: a value of
// [deploy.external] that KeysOf refuses hides neither the keys that do
// not apply nor the other checks (templates, programs, PIDs, [load]);
// only what reads the refused value is left out. A good spec passes.
func TestCheckAllAtOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "setup.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	for _, tc := range []struct {
		name, src string
		want      []string // "line key", one per error
	}{
		{name: "good", src: fmt.Sprintf(`[deploy]
deployer = "external"
[deploy.external]
url = "http://127.0.0.1:1"
setup = ["./setup.sh", "{deploy.external.replicas}"]
teardown = ["sh", "-c", "true"]
processes = [%d, "nginx: master"]
replicas = 2
[load]
rate = 10
[load.request]
path = "/"
`, pid)},
		{name: "every mistake", src: `[deploy]
deployer = "external"
placement = "split"
[deploy.external]
url = "http://127.0.0.1:1"
setup = ["./nosuch.sh", "{deploy.external.replica}"]
teardwon = ["./reset.sh"]
processes = [999999]
replicas = 2
[app]
name = "chain"
[load]
rate = 10
`, want: []string{
			"3 deploy.placement",
			"6 deploy.external.setup", // ./nosuch.sh
			"6 deploy.external.setup", // {deploy.external.replica}
			"7 deploy.external.teardwon",
			"8 deploy.external.processes",
			"9 deploy.external.replicas",
			"10 app",
			"12 load",
		}},
		{name: "a refused url hides no other key", src: `[deploy]
deployer = "external"
sidecar = "envoy"
[deploy.external]
url = "https://127.0.0.1:1"
setup = ["./setup.sh", "{deploy.external.nope}", "{deploy.external}"]
teardown = ["./gone.sh"]
setup_timeout = "soon"
[load]
protocol = "grpc"
target = "http://127.0.0.1:2"
`, want: []string{
			"3 deploy.sidecar",
			"5 deploy.external.url", // https; load.protocol is not compared with it
			"6 deploy.external.setup",
			"6 deploy.external.setup",
			"7 deploy.external.teardown",
			"8 deploy.external.setup_timeout",
			"9 load",
			"11 load.target",
		}},
		{name: "a refused setup leaves the keys it may name unjudged", src: `[deploy]
deployer = "external"
[deploy.external]
setup = "./setup.sh {deploy.external.replicas}"
teardown = ["./gone.sh"]
replicas = 2
processes = [999999]
[load.request]
path = "/"
`, want: []string{
			"3 deploy.external", // needs url: teardwon is no url misspelt
			"4 deploy.external.setup",
			"5 deploy.external.teardown",
			"7 deploy.external.processes",
		}},
		{name: "the url misspelt", src: `[deploy]
deployer = "external"
[deploy.external]
ulr = ["http://127.0.0.1:1"]
[load.request]
path = "/"
`, want: []string{
			`4 deploy.external.ulr`, // and not "needs url" too
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".toml")
			s, err := spec.Parse(path, []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = deploy.Resolve(s)
			got := spec.ErrorLines(err, path)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%d errors at\n%s\nwant %d at\n%s\nerrors:\n%v", len(got), strings.Join(got, "\n"), len(tc.want), strings.Join(tc.want, "\n"), err)
			}
		})
	}
}
