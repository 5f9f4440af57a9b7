package conformance

import (
	"math"
	"net/http"
	"slices"
	"sort"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	selectapp "github.com/svclab/svclab/apps/select"
	"github.com/svclab/svclab/internal/runtime/middleware/metrics"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
	selectorpb "github.com/svclab/svclab/proto/selector"
)

// TestMetrics serves a selector with HostConfig.mesh.metrics in every
// language over each transport, makes calls that succeed, calls that fail
// and health checks, and reads what its /metrics serves: the counters agree
// with the calls made (health checks left out, failures by Go's name of
// their code), the duration histogram has the Go host's buckets, the
// process's CPU and memory are there, and there is no svclab series beyond
// the Go host's three, so Prometheus keeps the same series for every host.
func TestMetrics(t *testing.T) {
	const okCalls, badCalls, healthChecks = 7, 3, 2
	method := selectorpb.Selector_Select_FullMethodName[1:]
	for _, im := range impls {
		t.Run(im.lang, func(t *testing.T) {
			argv := im.argv(t)
			for _, tr := range transports {
				t.Run(tr, func(t *testing.T) {
					at := freeAddr(t)
					cfg := hostConfig(selectapp.Name, selectapp.Selector, tr, nil)
					cfg.Mesh = &hostv1.Mesh{Metrics: &hostv1.Metrics{
						Listener: &hostv1.Listener{Endpoint: &hostv1.Endpoint{Transport: "http", Network: "tcp", Addr: at}},
						Buckets:  metrics.Buckets,
					}}
					p := startHost(t, im, argv, cfg)
					conn := dial(t, tr, p.addrs[selectapp.Selector])
					r := (&selectapp.Config{Size: selectapp.Std, Seed: 3}).Requests()[0]
					r.Method = selectorpb.Selector_Select_FullMethodName
					for range okCalls {
						if _, err := r.Invoke(ctxTimeout(t, callTimeout), conn); err != nil {
							t.Fatalf("select: %v", err)
						}
					}
					for range badCalls {
						err := conn.Invoke(ctxTimeout(t, callTimeout), r.Method, &selectorpb.SelectRequest{}, new(selectorpb.SelectResponse))
						wantStatus(t, "empty select", err, codes.InvalidArgument, "selector: values is empty")
					}
					for range healthChecks {
						if _, err := healthpb.NewHealthClient(conn).Check(ctxTimeout(t, callTimeout), &healthpb.HealthCheckRequest{}); err != nil {
							t.Fatalf("health: %v", err)
						}
					}

					fams := scrape(t, "http://"+at+"/metrics")
					var svclab []string
					for name := range fams {
						if len(name) > 7 && name[:7] == "svclab_" {
							svclab = append(svclab, name)
						}
					}
					sort.Strings(svclab)
					if want := []string{metrics.DurationName, metrics.ErrorsName, metrics.RequestsName}; !slices.Equal(svclab, want) {
						t.Errorf("svclab families %v, want %v", svclab, want)
					}
					labels := map[string]string{"group": selectapp.Selector, "component": selectapp.Selector, "method": method}
					if got := counter(fams[metrics.RequestsName], labels); got != okCalls+badCalls {
						t.Errorf("%s%v = %v, want %d", metrics.RequestsName, labels, got, okCalls+badCalls)
					}
					errLabels := map[string]string{"group": selectapp.Selector, "component": selectapp.Selector, "method": method, "code": codes.InvalidArgument.String()}
					if got := counter(fams[metrics.ErrorsName], errLabels); got != badCalls {
						t.Errorf("%s%v = %v, want %d", metrics.ErrorsName, errLabels, got, badCalls)
					}
					h := histogram(t, fams[metrics.DurationName], labels)
					if h.GetSampleCount() != okCalls+badCalls || !(h.GetSampleSum() > 0) {
						t.Errorf("duration histogram: count %d sum %v, want %d calls and a positive sum", h.GetSampleCount(), h.GetSampleSum(), okCalls+badCalls)
					}
					var bounds []float64
					for _, b := range h.GetBucket() {
						if !math.IsInf(b.GetUpperBound(), +1) { // the text format's +Inf, which Go's parser keeps
							bounds = append(bounds, b.GetUpperBound())
						}
					}
					if !slices.Equal(bounds, metrics.Buckets) {
						t.Errorf("buckets %v, want the Go host's %v", bounds, metrics.Buckets)
					}
					if last := h.GetBucket()[len(h.GetBucket())-1]; last.GetCumulativeCount() != okCalls+badCalls {
						t.Errorf("%d calls under %gs, want all %d", last.GetCumulativeCount(), last.GetUpperBound(), okCalls+badCalls)
					}
					// CPU in clock ticks: a host that has just started may
					// have used less than one.
					for name, least := range map[string]float64{"process_cpu_seconds_total": 0, "process_resident_memory_bytes": 1 << 20} {
						f := fams[name]
						if f == nil || len(f.GetMetric()) != 1 || value(f.GetMetric()[0]) < least {
							t.Errorf("%s: %v, want one value of at least %g", name, f, least)
						}
					}
				})
			}
		})
	}
}

// scrape reads u as Prometheus's text format, as Prometheus asks for it.
func scrape(t *testing.T, u string) map[string]*dto.MetricFamily {
	req, err := http.NewRequestWithContext(ctxTimeout(t, callTimeout), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", u, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", u, err)
	}
	return fams
}

// find is the metric of f whose labels are exactly want.
func find(f *dto.MetricFamily, want map[string]string) *dto.Metric {
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) == len(want) {
			same := true
			for k, v := range want {
				same = same && got[k] == v
			}
			if same {
				return m
			}
		}
	}
	return nil
}

func counter(f *dto.MetricFamily, labels map[string]string) float64 {
	if m := find(f, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return -1
}

func histogram(t *testing.T, f *dto.MetricFamily, labels map[string]string) *dto.Histogram {
	m := find(f, labels)
	if m == nil || m.GetHistogram() == nil {
		t.Fatalf("no histogram %v in %v", labels, f)
	}
	return m.GetHistogram()
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}
