package live

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func hist(vals ...int64) *hdr.Histogram {
	h := newHist()
	for _, v := range vals {
		_ = h.RecordValue(v)
	}
	return h
}

// serve starts a server for b and stops it when the test ends.
func serve(t *testing.T, b *Board) *Server {
	t.Helper()
	s, err := Listen(DefaultAddr, false, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readEvents reads a stream's events until the end event.
func readEvents(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var kinds []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			kinds = append(kinds, k)
			if k == "end" {
				break
			}
		}
	}
	return kinds
}

// A client that connects late is replayed the experiment, the finished
// runs and the current run, not the seconds of runs before it.
func TestReplayKeepsResultsAndCurrentRun(t *testing.T) {
	b := NewBoard()
	s := serve(t, b)
	b.Experiment(Experiment{Command: "run", Name: "x", Runs: []Run{{ID: "r1", Index: 1}, {ID: "r2", Index: 2}}})
	for _, id := range []string{"r1", "r2"} {
		b.RunStarted(Run{ID: id})
		b.Second(Second{Elapsed: -time.Second, Warmup: true, Requests: 3})
		b.Second(Second{Elapsed: time.Second, Requests: 3, Latency: hist(10, 20, 30)})
		if id == "r1" {
			b.RunFinished(Result{ID: id, Status: "ok"})
		}
	}
	b.End(nil)
	got := strings.Join(readEvents(t, s.URL()), " ")
	// r1's seconds are gone; r2's warm-up and measurement are phases.
	if want := "experiment result run phase second phase second end"; got != want {
		t.Errorf("replayed events %q, want %q", got, want)
	}
}

// The totals are the merged histogram of every second, as summary.json's
// total is the merge of the run's seconds.
func TestTotalsMergeSeconds(t *testing.T) {
	b := NewBoard()
	b.RunStarted(Run{ID: "r"})
	b.Second(Second{Elapsed: time.Second, Requests: 2, Latency: hist(1000, 3000)})
	b.Second(Second{Elapsed: 2 * time.Second, Requests: 2, Errors: 1, ErrorClasses: map[string]int64{"timeout": 1}, Latency: hist(2000, 90000)})
	tot := b.cur.totals()
	want := hist(1000, 3000, 2000, 90000)
	if tot.Requests != 4 || tot.Errors != 1 || tot.Classes["timeout"] != 1 {
		t.Errorf("totals %+v", tot)
	}
	if tot.Pct != percentilesOf(want) || tot.Pct.Max < 90 || tot.Pct.P50 < 1.9 || tot.Pct.P50 > 2.01 {
		t.Errorf("percentiles %+v, want %+v", tot.Pct, percentilesOf(want))
	}
}

func TestMetricsParse(t *testing.T) {
	b := NewBoard()
	s := serve(t, b)
	b.RunStarted(Run{ID: "r"})
	b.Second(Second{Elapsed: time.Second, Requests: 3, RPS: 3, Errors: 1, ErrorClasses: map[string]int64{"http_5xx": 1},
		Latency: hist(400, 2000, 300000), LagP99: time.Millisecond})
	b.Resources([]Process{{Role: "host", Name: "hop1", CPU: 0.5, Memory: 1 << 20}})
	b.Scaled(Scale{Group: "hop1", From: 1, To: 2})

	resp, err := http.Get(s.URL() + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	val := func(name string) float64 {
		f, ok := fams[name]
		if !ok || len(f.Metric) == 0 {
			t.Fatalf("/metrics has no %s", name)
		}
		m := f.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return 0
	}
	for name, want := range map[string]float64{
		"svclab_requests_total": 3, "svclab_request_errors_total": 1, "svclab_throughput_requests_per_second": 3,
		"svclab_request_latency_seconds": 3, "svclab_generator_send_lag_p99_seconds": 0.001,
		"svclab_process_cpu_cores": 0.5, "svclab_process_memory_bytes": 1 << 20, "svclab_replicas": 2,
	} {
		if got := val(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	h := fams["svclab_request_latency_seconds"].Metric[0].Histogram
	for _, bk := range h.Bucket {
		// 400 µs and 2 ms are under 2.5 ms; 300 ms is not under 0.25 s.
		if bk.GetUpperBound() == 0.0025 && bk.GetCumulativeCount() != 2 || bk.GetUpperBound() == 0.25 && bk.GetCumulativeCount() != 2 {
			t.Errorf("bucket le=%v holds %d", bk.GetUpperBound(), bk.GetCumulativeCount())
		}
	}

	// Prometheus asks for OpenMetrics, and gets it.
	req, _ := http.NewRequest("GET", s.URL()+"metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if ct := resp2.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("content type %q, want OpenMetrics", ct)
	}
}

func TestReadOnlyAndLoopback(t *testing.T) {
	s := serve(t, NewBoard())
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		req, _ := http.NewRequest(m, s.URL()+"metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, resp.StatusCode)
		}
	}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{{"127.0.0.1:0", true}, {"[::1]:0", true}, {"localhost:0", true}, {":0", false}, {"0.0.0.0:0", false}, {"192.0.2.1:0", false}} {
		err := checkLoopback(tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("checkLoopback(%q) = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
}

// The page is served, and says when the chart library is missing.
func TestPage(t *testing.T) {
	s := serve(t, NewBoard())
	resp, err := http.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var page strings.Builder
	for sc.Scan() {
		page.WriteString(sc.Text())
	}
	_, statErr := files.Open("assets/" + chartLib)
	if has := strings.Contains(page.String(), "uPlot.iife.min.js"); has != (statErr == nil) {
		t.Errorf("page loads the chart library: %v; library embedded: %v", has, statErr == nil)
	}
	if missing := strings.Contains(page.String(), "no-charts"); missing == (statErr == nil) {
		t.Errorf("page says the charts are missing: %v; library embedded: %v", missing, statErr == nil)
	}
}

// A run that lasts (svclab up) keeps the log bounded: the last maxSeconds
// of each per-second kind.
func TestLogBounded(t *testing.T) {
	b := NewBoard()
	b.RunStarted(Run{ID: "up"})
	for i := range maxSeconds + 10 {
		b.Second(Second{Elapsed: time.Duration(i+1) * time.Second, Requests: 1, Latency: hist(10)})
		b.Resources([]Process{{Role: "host", Name: "a"}})
	}
	n := map[string]int{}
	for _, e := range b.log {
		n[e.kind]++
	}
	if n["second"] != maxSeconds || n["resources"] != maxSeconds {
		t.Errorf("log holds %v, want %d seconds and resources", n, maxSeconds)
	}
	if tot := b.cur.totals(); tot.Requests != maxSeconds+10 {
		t.Errorf("totals %d requests, want every second's, %d", tot.Requests, maxSeconds+10)
	}
}

// Thresholds and hops are states: a late client is replayed the last
// of each, not their history; a kept run is a result that counts as
// finished.
func TestReplayStatesAndKeptRuns(t *testing.T) {
	b := NewBoard()
	s := serve(t, b)
	b.Experiment(Experiment{Command: "run", Name: "x", Kept: 1, Runs: []Run{{ID: "r1", Index: 1}, {ID: "r2", Index: 2}}})
	b.Kept(Result{ID: "r1", Status: "ok"}, Totals{Requests: 7})
	b.RunStarted(Run{ID: "r2"})
	for i, state := range []string{"pending", "holds", "broken"} {
		b.Thresholds([]Threshold{{Expr: "total: p99_ms <= 5", State: state}}, false)
		b.Hops(Hops{Window: 5, Traces: i})
		b.Second(Second{Elapsed: time.Duration(i+1) * time.Second, Requests: 1, Latency: hist(10)})
	}
	b.Thresholds([]Threshold{{Expr: "total: p99_ms <= 5", State: "broken"}}, true)
	b.End(nil)
	got := strings.Join(readEvents(t, s.URL()), " ")
	if want := "experiment result run phase second second hops second thresholds end"; got != want {
		t.Errorf("replayed events %q, want %q", got, want)
	}
	if b.results != 1 {
		t.Errorf("%d runs finished, want the kept one", b.results)
	}
}
