package local_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
)

// TestEnvoySpansJaeger deploys a three-hop chain, each hop its own
// process behind an Envoy sidecar (and, in node mode, one Envoy for all),
// with deploy.tracing = 1, and checks in the real Jaeger that every call
// is one trace in which Envoy's own spans sit between each hop's client
// and server spans: the caller's proxy (a client span under the app's
// client span), then the callee's proxy (a server span under it), then the
// app's server span; the entry's proxy is the root.
func TestEnvoySpansJaeger(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(deploy.JaegerPath()); err != nil {
		t.Skipf("Jaeger %s is not built (make jaeger): %v", deploy.JaegerVersion, err)
	}
	proxyOrSkip(t, spec.SidecarEnvoy)
	for _, c := range []struct {
		transport, mode string
		ratio           float64
	}{
		{"grpc", "sidecar", 1}, {"http", "sidecar", 1}, {"grpc", "node", 1},
		// Below 1 a trace is still kept or dropped whole: only the
		// entry's proxy decides, and every proxy after it follows.
		{"grpc", "sidecar", 0.5}, {"grpc", "node", 0.5},
	} {
		t.Run(fmt.Sprintf("%s/%s/%g", c.transport, c.mode, c.ratio), func(t *testing.T) {
			testEnvoySpans(t, c.transport, c.mode, c.ratio)
		})
	}
}

func testEnvoySpans(t *testing.T, tr, mode string, ratio float64) {
	p := resolve(t, fmt.Sprintf(`[app]
name = "chain"
hops = 3
[deploy]
transport = %q
placement = "split"
sidecar = "envoy"
proxy_mode = %q
tracing = %g
`, tr, mode, ratio))
	calls := 10
	if ratio < 1 {
		calls = 80
	}
	traces := tracesOf(t, p, calls)
	if ratio < 1 {
		// Binomial(80, 0.5): 40 ± 4.5; outside 15..65 is beyond 5 sd.
		if n := len(traces); n < 15 || n > 65 {
			t.Errorf("%d traces of %d calls at ratio %g", n, calls, ratio)
		}
	}
	proxy := func(group string) string {
		if mode == "node" {
			return "node.envoy"
		}
		return group + ".envoy"
	}
	// Each line: a span, and the span it is a child of.
	want := []string{
		"app client →hop2@hop1 under app server hop1@hop1",
		"app client →hop3@hop2 under app server hop2@hop2",
		"app server hop1@hop1 under proxy server @" + proxy("hop1"),
		"app server hop2@hop2 under proxy server @" + proxy("hop2"),
		"app server hop3@hop3 under proxy server @" + proxy("hop3"),
		"proxy client @" + proxy("hop1") + " under app client →hop2@hop1",
		"proxy client @" + proxy("hop2") + " under app client →hop3@hop2",
		"proxy server @" + proxy("hop1") + " under root",
		"proxy server @" + proxy("hop2") + " under proxy client @" + proxy("hop1"),
		"proxy server @" + proxy("hop3") + " under proxy client @" + proxy("hop2"),
	}
	slices.Sort(want)
	name := func(s deploy.Span) string {
		who, by := s.Component, "app"
		switch {
		case s.Proxy:
			by = "proxy"
		case s.Kind == "client":
			who = "→" + s.Peer
		}
		return fmt.Sprintf("%s %s %s@%s", by, s.Kind, who, s.Service)
	}
	for id, tr := range traces {
		byID := map[string]deploy.Span{}
		for _, s := range tr {
			byID[s.SpanID] = s
		}
		var got []string
		for _, s := range tr {
			parent := "root"
			if s.ParentID != "" {
				pa, ok := byID[s.ParentID]
				if !ok {
					t.Errorf("trace %s: span %s (%s) has a parent missing from the trace", id, s.SpanID, name(s))
					continue
				}
				parent = name(pa)
			}
			got = append(got, name(s)+" under "+parent)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("trace %s:\n got %q\nwant %q", id, got, want)
		}
	}
}

// tracesOf deploys p (which has deploy.tracing), makes calls of its first
// request, stops it and returns what its Jaeger received by trace, which at
// a ratio of 1 must be one trace per call.
func tracesOf(t *testing.T, p *runtime.Topology, calls int) map[string][]deploy.Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := local.Deploy(ctx, p, local.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	defer d.Stop(context.Background())
	if _, err := d.Spans(); err == nil {
		t.Error("Spans answered before the deployment stopped")
	}
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := p.Requests()[0]
	for range calls {
		if _, err := req.Invoke(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	spans, err := d.Spans()
	if err != nil {
		t.Fatalf("spans: %v", err)
	}
	traces := map[string][]deploy.Span{}
	for _, s := range spans {
		traces[s.TraceID] = append(traces[s.TraceID], s)
	}
	if len(traces) != calls && p.Mesh.Tracing >= 1 {
		t.Fatalf("%d traces in Jaeger for %d calls (%d spans)", len(traces), calls, len(spans))
	}
	return traces
}
