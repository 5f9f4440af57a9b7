package program

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/sidecar"
)

// needEnvoy skips the test without Envoy (`make envoy`).
func needEnvoy(t *testing.T) {
	t.Helper()
	k, _ := sidecar.Lookup("envoy")
	if _, err := k.Binary(); err != nil {
		t.Skip(err)
	}
}

// relay is a Python HTTP server that answers GET / with what the
// program at NEXT answers it (its own address argv[1] when NEXT is
// unset); with FORWARD=1 it hands its call the traceparent header it was
// given, as Istio asks of the programs in its mesh, and nothing else.
const relay = `
import http.server, os, sys, urllib.request
NEXT, FORWARD = os.environ.get("NEXT", ""), os.environ.get("FORWARD") == "1"
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = sys.argv[1].encode()
        if NEXT and self.path != "/healthz":
            req = urllib.request.Request("http://" + NEXT + "/")
            if FORWARD and self.headers.get("traceparent"):
                req.add_header("traceparent", self.headers["traceparent"])
            b = urllib.request.urlopen(req).read()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1].rsplit(":", 1)[1])), H).serve_forever()
`

// chain is a spec of relays: a calls b, b calls c (c answers its own
// address), each forwarding the trace context when forward is set, with
// Envoy sidecars over mutual TLS, under the given [deploy] keys and
// tables.
func chain(forward bool, deployKeys, tables string) string {
	f := "0"
	if forward {
		f = "1"
	}
	component := func(name, next string) string {
		env := `{ FORWARD = "` + f + `" }`
		if next != "" {
			env = `{ FORWARD = "` + f + `", NEXT = "{addr:` + next + `}" }`
		}
		return `[app.components.` + name + `]
command = ["python3", "-c", '''` + relay + `''', "{listen}"]
protocol = "http"
health = "/healthz"
env = ` + env + "\n"
	}
	return "[app]\nname = \"exec\"\nentry = \"a\"\n" + component("a", "b") + component("b", "c") + component("c", "") +
		"[deploy]\nsidecar = \"envoy\"\nmtls = true\n" + deployKeys + tables
}

// get calls dep's entry n times (a connection each) and counts the
// answers.
func get(t *testing.T, dep deploy.Deployment, n int) map[string]int {
	t.Helper()
	return spread(t, dep, n)
}

// TestSidecarReplicas: with sidecars, mutual TLS and three replicas of
// c, each replica has its own proxy, b's proxy spreads b's calls over
// every replica's, and a replica that a kill fault ends leaves it: the
// calls go on to the others, and the killed replica's proxies are gone;
// so does one that dies.
func TestSidecarReplicas(t *testing.T) {
	need(t, "python3")
	needEnvoy(t)
	topo := writeSpec(t, chain(false, "", "[deploy.replicas]\nc = 3\n[deploy.faults.kill]\ntarget = \"c\"\nreplica = 1\n"))
	dep, err := deployOf(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*deployment)
	proxies := func() []string {
		var out []string
		for _, p := range dep.Processes() {
			if p.Info().Role == deploy.RoleSidecar {
				out = append(out, p.Info().Name)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := proxies(), []string{"a.envoy", "b.envoy", "c#0.envoy", "c#1.envoy", "c#2.envoy"}; !slices.Equal(got, want) {
		t.Errorf("proxies %v, want %v", got, want)
	}
	if len(d.fronts) != 0 {
		t.Errorf("fronts %v: with sidecars the callers' proxies balance, and the entry has one replica", d.fronts)
	}
	seen := get(t, dep, 30)
	for _, addr := range d.replicas["c"] {
		if seen[addr] < 5 {
			t.Errorf("replica at %s took %d of 30 calls: %v", addr, seen[addr], seen)
		}
	}
	// The replicas' inbound listeners are mutual TLS.
	client := &http.Client{Timeout: 5 * time.Second}
	if resp, err := client.Get("http://" + d.inboundOf("c", 2) + "/"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Errorf("a plaintext client got %s %q from c#2's proxy", resp.Status, b)
	}
	info, err := dep.Capabilities().Killer.Kill(topo.GroupOf("c"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "c#1" {
		t.Errorf("killed %s, want c#1", info.Name)
	}
	if got, want := proxies(), []string{"a.envoy", "b.envoy", "c#0.envoy", "c#2.envoy"}; !slices.Equal(got, want) {
		t.Errorf("proxies after the kill %v, want %v", got, want)
	}
	seen = get(t, dep, 20)
	if seen[d.replicas["c"][1]] != 0 || len(seen) != 2 {
		t.Errorf("calls after c#1 was killed went to %v, want both others", seen)
	}
	// Envoy would retry past a replica that is gone; what takes it out
	// is the update of b's proxy.
	checkUpstreams(t, d, "b", "c", 0, 2)
	select {
	case p := <-dep.Exited():
		t.Errorf("a killed replica or its proxy was reported on Exited: %s", p.Info())
	case <-time.After(500 * time.Millisecond):
	}
	// A replica that dies leaves a's proxy too, and its death is
	// reported.
	var c0 deploy.Process
	for _, p := range dep.Processes() {
		if p.Info().Name == "c#0" {
			c0 = p
		}
	}
	if err := syscall.Kill(c0.Info().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if ex := (<-dep.Exited()).Exit(); ex.Process.Name != "c#0" {
		t.Errorf("reported the exit of %s, want c#0", ex.Process.Name)
	}
	if seen := get(t, dep, 10); seen[d.replicas["c"][2]] != 10 {
		t.Errorf("calls after c#0 died went to %v, want c#2 alone", seen)
	}
	checkUpstreams(t, d, "b", "c", 2)
}

// checkUpstreams checks that the outbound listener of caller's proxy to
// callee leads to the inbound listeners of callee's replicas want, and to
// the same in the endpoint file the running Envoy reads.
func checkUpstreams(t *testing.T, d *deployment, caller, callee string, want ...int) {
	t.Helper()
	var ups []string
	for _, i := range want {
		ups = append(ups, d.inboundOf(callee, i))
	}
	d.mesh.mu.Lock()
	defer d.mesh.mu.Unlock()
	rm := d.mesh.replicas[d.replicas[caller][0]]
	for _, c := range rm.configs {
		for _, l := range c.Listeners {
			if l.Name != "out_"+caller+"_"+callee {
				continue
			}
			if !slices.Equal(l.Upstreams, ups) {
				t.Errorf("%s leads to %v, want %v", l.Name, l.Upstreams, ups)
			}
			b, err := os.ReadFile(filepath.Join(c.Dir, "eds", "to_"+l.Name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), `"port_value"`); n != len(ups) {
				t.Errorf("Envoy's endpoint file has %d endpoints, want %d: %s", n, len(ups), b)
			}
			return
		}
	}
	t.Errorf("no listener out_%s_%s", caller, callee)
}

// TestSidecarScale: with sidecars, Scale adds replicas of c, each with its
// own proxy, to which b's proxy sends once they are healthy; scaling in
// takes the newest out of b's proxy and stops them and their proxies.
func TestSidecarScale(t *testing.T) {
	need(t, "python3")
	needEnvoy(t)
	topo := writeSpec(t, chain(false, "", "[deploy.autoscale.c]\nmin = 1\nmax = 3\ncpu_target = 80\nsync_period = \"1h\"\n"))
	dep, err := deployOf(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*deployment)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Scale(ctx, "c", 3); err != nil {
		t.Fatal(err)
	}
	count := func(role string) int {
		n := 0
		for _, p := range dep.Processes() {
			if p.Info().Role == role {
				n++
			}
		}
		return n
	}
	if h, s := count(deploy.RoleHost), count(deploy.RoleSidecar); h != 5 || s != 5 {
		t.Errorf("after scaling c to 3: %d programs and %d proxies, want 5 and 5", h, s)
	}
	if seen := get(t, dep, 9); len(seen) != 3 {
		t.Errorf("9 calls after scaling c to 3 reached %v, want all three replicas", seen)
	}
	if err := d.Scale(ctx, "c", 1); err != nil {
		t.Fatal(err)
	}
	if h, s := count(deploy.RoleHost), count(deploy.RoleSidecar); h != 3 || s != 3 {
		t.Errorf("after scaling c to 1: %d programs and %d proxies, want 3 and 3", h, s)
	}
	if seen := get(t, dep, 4); len(seen) != 1 || seen[d.replicas["c"][0]] != 4 {
		t.Errorf("calls after scaling c to 1 reached %v, want c#0 at %s alone", seen, d.replicas["c"][0])
	}
	select {
	case p := <-dep.Exited():
		t.Errorf("a replica scaled in, or its proxy, was reported on Exited: %s", p.Info())
	case <-time.After(500 * time.Millisecond):
	}
}

// TestSidecarTelemetry: with deploy.tracing the proxies' spans stand for
// the programs': when each program forwards traceparent, a request's
// spans join in one trace, a→b→c, each hop a client span of the caller's
// proxy under the caller's server span and over the callee's; when the
// programs do not, each hop is a trace of its own. With deploy.metrics
// the proxies' stats are the run's series, labelled by hop.
func TestSidecarTelemetry(t *testing.T) {
	need(t, "python3")
	needEnvoy(t)
	for _, forward := range []bool{true, false} {
		t.Run(fmt.Sprintf("forward=%t", forward), func(t *testing.T) {
			const n = 5
			dep, err := deployOf(t, writeSpec(t, chain(forward, "tracing = 1.0\nmetrics = true\n", "")))
			if err != nil {
				t.Fatal(err)
			}
			caps := dep.Capabilities()
			if caps.Traces == nil || caps.Metrics == nil || caps.Telemetry == nil || caps.Mesh == nil {
				t.Fatalf("capabilities %+v: want traces, metrics, telemetry and mesh", caps)
			}
			get(t, dep, n)
			if err := dep.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans, err := caps.Traces.Spans()
			if err != nil {
				t.Fatal(err)
			}
			checkTraces(t, spans, forward, n)
			samples, err := caps.Metrics.Series()
			if err != nil {
				t.Fatal(err)
			}
			checkHopMetrics(t, samples, n)
		})
	}
}

// checkTraces checks the spans of n requests through a→b→c.
func checkTraces(t *testing.T, spans []deploy.Span, forward bool, n int) {
	t.Helper()
	byTrace := map[string][]deploy.Span{}
	for _, s := range spans {
		if s.Proxy {
			t.Errorf("span %+v is marked a proxy's: the proxies' spans stand for the programs'", s)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	// The hops: who made each span, of which kind, for which component.
	shape := func(ss []deploy.Span) string {
		byID := map[string]deploy.Span{}
		for _, s := range ss {
			byID[s.SpanID] = s
		}
		var out []string
		for _, s := range ss {
			parent := "root"
			if p, ok := byID[s.ParentID]; ok {
				parent = p.Service + "/" + p.Kind
			} else if s.ParentID != "" {
				parent = "missing"
			}
			out = append(out, fmt.Sprintf("%s/%s(%s%s)<-%s", s.Service, s.Kind, s.Component, s.Peer, parent))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	want := map[string]int{}
	if forward {
		want["a/client(b)<-a/server a/server(a)<-root b/client(c)<-b/server b/server(b)<-a/client c/server(c)<-b/client"] = n
	} else {
		// Each proxy's call out starts a trace: the program did not hand
		// it the context of the call it serves.
		want["a/server(a)<-root"] = n
		want["a/client(b)<-root b/server(b)<-a/client"] = n
		want["b/client(c)<-root c/server(c)<-b/client"] = n
	}
	got := map[string]int{}
	for _, ss := range byTrace {
		got[shape(ss)]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("traces by shape:\n%v\nwant\n%v", got, want)
	}
}

// checkHopMetrics checks that the series count the n calls on each hop:
// a's proxy's calls to b, b's to c.
func checkHopMetrics(t *testing.T, samples []deploy.Sample, n int) {
	t.Helper()
	last := map[string]float64{}
	for _, s := range samples {
		if s.Name == "envoy_cluster_upstream_rq_total" || s.Name == "envoy_cluster_upstream_rq_time_count" {
			k := s.Name + " " + s.Labels["group"] + "→" + s.Labels["component"] + " " + s.Labels["envoy_cluster_name"]
			last[k] = max(last[k], s.Value)
		}
	}
	for _, k := range []string{
		"envoy_cluster_upstream_rq_total a→b to_out_a_b", "envoy_cluster_upstream_rq_total b→c to_out_b_c",
		"envoy_cluster_upstream_rq_time_count a→b to_out_a_b", "envoy_cluster_upstream_rq_time_count b→c to_out_b_c",
		// The inbound legs, proxy to program.
		"envoy_cluster_upstream_rq_total c→c to_in_c",
	} {
		if last[k] != float64(n) {
			t.Errorf("%s: %g, want %d; series: %v", k, last[k], n, last)
		}
	}
}
