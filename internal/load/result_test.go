package load

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/parquet-go/parquet-go"
)

// TestResultFiles runs with warm-up and raw samples on and checks every
// file of the run directory against docs/RESULTS.md.
func TestResultFiles(t *testing.T) {
	srv := fixedServer(t, 0)
	var mu sync.Mutex
	var progress []Progress
	cfg := Config{Target: srv.URL, Rate: 100, Warmup: Duration(time.Second), Duration: Duration(2 * time.Second),
		RawSamples: true, Request: &Request{Path: "/item?id=3"}}
	res := run(t, cfg, Options{Progress: func(p Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	}})
	dir := t.TempDir()
	if err := res.WriteDir(dir); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	if len(progress) < 3 || !progress[0].Warmup || progress[len(progress)-1].Warmup {
		t.Errorf("progress: want warm-up reports then measurement reports, got %+v", progress)
	}
	last := progress[len(progress)-1]
	mu.Unlock()

	var sum Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"duration_s"`, `"operations"`, `"late_sends"`, `"dropped"`, `"errors_by_class"`,
		`"service_time"`, `"p999_ms"`, `"stdev_ms"`, `"kind": "total"`, `"name": "GET /item?id=3"`,
		`"generator": {`, `"lag_p50_ms"`, `"lag_p99_ms"`, `"lag_p999_ms"`, `"lag_max_ms"`, `"gc_pause_total_ms"`,
		`"gc_pause_max_ms"`, `"cpu_percent"`, `"verdict"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("summary.json lacks %s", key)
		}
	}
	tot := sum.Operations[0]
	if tot.Name != "total" || tot.Count < 190 || tot.Count > 201 || sum.DurationS != 2 {
		t.Errorf("the warm-up leaked into the measurement: duration %v, total %+v", sum.DurationS, tot)
	}
	if last.TotalRequests != tot.Count {
		t.Errorf("last progress counts %d requests, summary %d", last.TotalRequests, tot.Count)
	}

	// The generator object carries the send lag of the window's sends.
	if g := sum.Generator; g == nil || g.Sends != tot.Count || !(g.LagP50Ms <= g.LagP99Ms && g.LagP99Ms <= g.LagP999Ms && g.LagP999Ms <= g.LagMaxMs) || g.Verdict == "" {
		t.Errorf("summary.json generator %+v: want the window's %d sends and ordered lag percentiles", g, tot.Count)
	}

	rows, err := parquet.ReadFile[SeriesRow](filepath.Join(dir, "timeseries.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var perSec int64
	for _, r := range rows {
		if r.Operation == "total" {
			perSec += r.Requests
		}
	}
	if len(rows) != 4 || perSec != tot.Count {
		t.Errorf("timeseries: %d rows (want 2 seconds × 2 operations), total requests %d (want %d)", len(rows), perSec, tot.Count)
	}

	samples, err := parquet.ReadFile[sampleRow](filepath.Join(dir, "samples.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(samples)) != tot.Count {
		t.Errorf("samples.parquet has %d rows, want %d", len(samples), tot.Count)
	}
	for _, s := range samples {
		if s.TNs < 0 || s.TNs >= int64(2*time.Second) || s.Status != "ok" || s.LatencyUs < s.ServiceTimeUs {
			t.Fatalf("bad sample %+v", s)
		}
	}

	for _, name := range []string{"latency.hlog", "service_time.hlog"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rd := hdr.NewHistogramLogReader(f)
		var n int64
		tags := map[string]bool{}
		for i := 0; i < 100; i++ {
			h, err := rd.NextIntervalHistogram()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if h == nil {
				break
			}
			tags[h.Tag()] = true
			if h.Tag() == "total" {
				n += h.TotalCount()
			}
		}
		f.Close()
		if n != tot.Count || !tags["GET_/item?id=3"] {
			t.Errorf("%s: %d requests under tag total (want %d), tags %v", name, n, tot.Count, tags)
		}
	}

	g, err := res.GeneratorJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"cpu_s", "cpu_percent", "late_sends", "dropped", "lag_p50_ms", "lag_p99_ms", "lag_max_ms",
		"gc_pause_total_ms", "gc_pause_max_ms", "bottleneck", "reason"} {
		if !strings.Contains(string(g), `"`+key+`"`) {
			t.Errorf("generator object lacks %q: %s", key, g)
		}
	}
	var sb strings.Builder
	if err := res.Table(&sb); err != nil || !strings.Contains(sb.String(), "GET /item?id=3") {
		t.Errorf("table: %v\n%s", err, sb.String())
	}
}

// TestDroppedAndErrors: past max_inflight, arrivals are counted as
// dropped; timeouts and refused connections get their classes.
func TestDroppedAndErrors(t *testing.T) {
	slow := fixedServer(t, 200*time.Millisecond)
	res := run(t, Config{Target: slow.URL, Rate: 100, MaxInflight: 5, Timeout: Duration(100 * time.Millisecond),
		Duration: Duration(time.Second)}, Options{})
	tot := mustOp(t, res, "total")
	if res.Summary.Dropped < 50 || tot.ErrorsByClass["timeout"] != tot.Count || tot.Count < 5 {
		t.Errorf("dropped %d, total %+v: want most arrivals dropped and the rest timed out", res.Summary.Dropped, tot)
	}
	if len(res.Warnings) == 0 || !strings.Contains(texts(res.Warnings), "max_inflight") {
		t.Errorf("warnings %v lack the drops", res.Warnings)
	}

	res = run(t, Config{Target: "http://" + freePort(t), Rate: 50, Duration: Duration(500 * time.Millisecond)}, Options{})
	if tot := mustOp(t, res, "total"); tot.Errors != tot.Count || tot.ErrorsByClass["connection"] != tot.Count {
		t.Errorf("refused connections: %+v", tot)
	}
}

func TestCanceled(t *testing.T) {
	srv := fixedServer(t, 0)
	cfg := Config{Target: srv.URL, Mode: "closed", Users: 2, ThinkTime: Duration(time.Millisecond), Duration: Duration(time.Minute)}
	tg, err := NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, cfg, tg, Options{})
	if !errors.Is(err, context.DeadlineExceeded) || res == nil {
		t.Fatalf("Run = %v, %v; want a partial result and the context's error", res, err)
	}
	defer res.Close()
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("stopping took %v", el)
	}
	if tot := mustOp(t, res, "total"); tot.Count == 0 || res.Summary.DurationS > 1 {
		t.Fatalf("partial result: %+v", res.Summary)
	}
}

// TestIdleClosedConnection: a server that closes idle keep-alive
// connections must not turn into errors: the request is resent on a new
// connection, as net/http does.
func TestIdleClosedConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	srv.Config.IdleTimeout = 30 * time.Millisecond
	srv.Start()
	defer srv.Close()
	res := run(t, Config{Target: srv.URL, Mode: "closed", Users: 1, ThinkTime: Duration(80 * time.Millisecond), Requests: 8}, Options{})
	if tot := mustOp(t, res, "total"); tot.Count != 8 || tot.Errors != 0 {
		t.Fatalf("total %+v: want 8 requests, no error", tot)
	}
}
