package boutique_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// TestPagesThroughMiddleware deploys boutique split over grpc with
// deploy.tracing and deploy.metrics and its real backends (Jaeger,
// Prometheus), asks for HTML pages, and checks that each page is a call of
// the frontend as the middleware sees calls: a request count and duration
// per route, an error for a page not found, and a root server span per
// page under which the page's calls to other services are client spans.
func TestPagesThroughMiddleware(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys boutique; skipped with -short")
	}
	if _, err := os.Stat(deploy.JaegerPath()); err != nil {
		t.Skipf("Jaeger %s is not built (make jaeger): %v", deploy.JaegerVersion, err)
	}
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus to scrape with: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := up(t, ctx, newPool(t), loadSpec(t, `[app]
name = "boutique"
[deploy]
transport = "grpc"
placement = "split"
tracing = 1.0
metrics = true
`))
	const homes, products = 3, 2
	b := newBrowser(t, d.GatewayURL())
	for range homes {
		b.do("GET", "/", nil, 200)
	}
	for range products {
		b.do("GET", "/product/OLJCESPC7Z", nil, 200)
	}
	resp, err := b.c.Get(d.GatewayURL() + "/no-such-page")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /no-such-page: %s, want 404", resp.Status)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}

	series, err := d.Capabilities().Metrics.Series()
	if err != nil {
		t.Fatalf("series: %v", err)
	}
	last := map[string]float64{} // name method [code] → last value, for the frontend
	for _, s := range series {
		if s.Labels["component"] != "frontend" {
			continue
		}
		last[s.Name+" "+s.Labels["method"]+" "+s.Labels["code"]] = s.Value
	}
	for key, want := range map[string]float64{
		"svclab_requests_total frontend/GET /{$} ":                          homes,
		"svclab_request_duration_seconds_count frontend/GET /{$} ":          homes,
		"svclab_requests_total frontend/GET /product/{id} ":                 products,
		"svclab_request_duration_seconds_count frontend/GET /product/{id} ": products,
		"svclab_requests_total frontend/GET ":                               1,
		"svclab_request_errors_total frontend/GET NotFound":                 1,
	} {
		if got := last[key]; got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if got := last["svclab_request_errors_total frontend/GET /{$} Internal"]; got != 0 {
		t.Errorf("home pages counted %v errors", got)
	}

	spans, err := d.Capabilities().Traces.Spans()
	if err != nil {
		t.Fatalf("spans: %v", err)
	}
	children := map[string]int{} // span id → client spans under it
	for _, s := range spans {
		if s.Kind == "client" {
			children[s.ParentID]++
		}
	}
	pages := map[string]int{}
	for _, s := range spans {
		if s.Kind != "server" || s.Component != "frontend" {
			continue
		}
		pages[s.Name]++
		if s.ParentID != "" {
			t.Errorf("page span %s has a parent: the load generator sent no trace context", s.Name)
		}
		// A home page asks currency, cart, catalogue (and an ad) at least.
		if s.Name == "frontend/GET /{$}" && children[s.SpanID] < 3 {
			t.Errorf("home page span %s has %d client spans under it, want its calls to other services", s.SpanID, children[s.SpanID])
		}
		if s.Name == "frontend/GET" && !s.Error {
			t.Error("the page not found's span is not an error")
		}
	}
	if pages["frontend/GET /{$}"] != homes || pages["frontend/GET /product/{id}"] != products || pages["frontend/GET"] != 1 {
		t.Errorf("frontend server spans by name %v, want %d home pages, %d product pages and one not found", pages, homes, products)
	}
}
