package local_test

import (
	"context"
	"maps"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/middleware/metrics"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// TestMetricsPrometheus deploys a three-process chain with deploy.metrics
// and a real Prometheus, makes calls, and checks that what Prometheus
// scraped counts every call at every hop, in the counter and in the
// histogram, and no error.
func TestMetricsPrometheus(t *testing.T) {
	t.Parallel()
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus to scrape with: %v", err)
	}
	p := resolve(t, "[app]\nname = \"chain\"\nhops = 3\n[deploy]\nplacement = \"split\"\ntransport = \"http\"\nmetrics = true\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := local.Deploy(ctx, p, local.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	defer d.Stop(context.Background())
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 30
	req := p.Requests()[0]
	for range calls {
		if _, err := req.Invoke(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	// No wait: Stop has Prometheus scrape every host once more before
	// they stop, so the last calls are counted.
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	series, err := d.Series()
	if err != nil {
		t.Fatalf("series: %v", err)
	}
	last := map[string]float64{} // name/component → last value
	var errs float64
	for _, s := range series {
		switch s.Name {
		case "svclab_requests_total", "svclab_request_duration_seconds_count":
			last[s.Name+"/"+s.Labels["component"]] = s.Value
		case "svclab_request_errors_total":
			errs += s.Value
		}
	}
	// The runner's first checking call is not made here: every component
	// served exactly the calls made.
	for _, c := range []string{"hop1", "hop2", "hop3"} {
		for _, name := range []string{"svclab_requests_total", "svclab_request_duration_seconds_count"} {
			if got := last[name+"/"+c]; got != calls {
				t.Errorf("%s{component=%q} = %v, want %d", name, c, got, calls)
			}
		}
	}
	if errs != 0 {
		t.Errorf("%v errors counted", errs)
	}
}

// TestMetricsBackendFails checks that a Prometheus that exits at start
// fails the deployment with one clear error and leaves nothing running.
func TestMetricsBackendFails(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1) to stand for a backend that fails")
	}
	t.Setenv(deploy.PrometheusEnv, bin)
	p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\nmetrics = true\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := local.Deploy(ctx, p, local.Options{})
	if err == nil {
		d.Stop(context.Background())
		t.Fatal("deployed with a metrics backend that exits at start")
	}
	if !strings.Contains(err.Error(), "deploy.metrics: Prometheus "+bin+" exited at start") {
		t.Errorf("error: %v", err)
	}
	m := regexp.MustCompile(`deployment ([0-9a-f]+): `).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error names no deployment: %v", err)
	}
	if procs := deploymentProcs(m[1]); len(procs) > 0 {
		t.Errorf("processes of deployment %s left running: %v", m[1], procs)
	}
}

// TestMetricsScaledAwayReplica serves calls on 2 replicas of hop2 with
// deploy.metrics, scales hop2 down to 1 right after the last call, and
// checks that what Prometheus scraped counts every call hop2 served: the
// replica scaled away stayed in the targets until it had drained and been
// scraped once more, so its last counters reached the series that
// metrics.parquet is written from, under its own process label.
func TestMetricsScaledAwayReplica(t *testing.T) {
	t.Parallel()
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus to scrape with: %v", err)
	}
	p := resolve(t, "[app]\nname = \"chain\"\nhops = 2\n[deploy]\nplacement = \"split\"\ntransport = \"grpc\"\nmetrics = true\n[deploy.replicas]\nhop2 = 2\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := local.Deploy(ctx, p, local.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	defer d.Stop(context.Background())
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 60
	req := p.Requests()[0]
	for range calls {
		if _, err := req.Invoke(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	if err := d.Scale(ctx, "hop2", 1); err != nil {
		t.Fatalf("scale down: %v", err)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	series, err := d.Series()
	if err != nil {
		t.Fatalf("series: %v", err)
	}
	last := map[string]float64{} // process → its last svclab_requests_total of hop2
	for _, s := range series {
		if s.Name == "svclab_requests_total" && s.Labels["component"] == "hop2" {
			last[s.Labels["process"]] = s.Value
		}
	}
	var total float64
	for _, v := range last {
		total += v
	}
	if total != calls {
		t.Errorf("hop2's replicas counted %v calls (%v), want %d", total, last, calls)
	}
	if last["hop2#1"] == 0 {
		t.Errorf("the replica scaled away (hop2#1) has no count: %v", last)
	}
}

// TestMetricsLanguages deploys select with deploy.metrics, its selector a
// Java or a Python host behind the Go frontend, and a real Prometheus:
// what it scraped counts every call at both components, under the same
// names, labels and bucket bounds as the Go host's, and has the Java or
// Python process's CPU and memory.
func TestMetricsLanguages(t *testing.T) {
	t.Parallel()
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus to scrape with: %v", err)
	}
	for _, lang := range []string{runtime.LangJava, runtime.LangPython} {
		t.Run(lang, func(t *testing.T) {
			needLanguage(t, lang)
			p := resolve(t, "[app]\nname = \"select\"\n[deploy]\nplacement = \"split\"\ntransport = \"grpc\"\nmetrics = true\nstart_timeout = \"90s\"\n[deploy.languages]\nselector = \""+lang+"\"\n")
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
			defer cancel()
			d, err := local.Deploy(ctx, p, local.Options{})
			if err != nil {
				t.Fatalf("deploy: %v", err)
			}
			defer d.Stop(context.Background())
			conn, err := d.Dial(ctx, transport.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			const calls = 25
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
			series, err := d.Series()
			if err != nil {
				t.Fatalf("series: %v", err)
			}
			last := map[string]float64{}
			bounds := map[string]map[string]bool{} // component → le labels
			for _, s := range series {
				c := s.Labels["component"]
				switch s.Name {
				case "svclab_requests_total", "svclab_request_duration_seconds_count":
					last[s.Name+"/"+c] = s.Value
				case "svclab_request_duration_seconds_bucket":
					if bounds[c] == nil {
						bounds[c] = map[string]bool{}
					}
					bounds[c][s.Labels["le"]] = true
				case "process_resident_memory_bytes", "process_cpu_seconds_total":
					last[s.Name+"/"+s.Labels["process"]] = s.Value
				}
			}
			for _, c := range []string{"frontend", "selector"} {
				for _, name := range []string{"svclab_requests_total", "svclab_request_duration_seconds_count"} {
					if got := last[name+"/"+c]; got != calls {
						t.Errorf("%s{component=%q} = %v, want %d", name, c, got, calls)
					}
				}
			}
			if len(bounds["selector"]) != len(metrics.Buckets)+1 || !maps.Equal(bounds["selector"], bounds["frontend"]) {
				t.Errorf("the %s selector's bucket bounds %v differ from the Go frontend's %v", lang, bounds["selector"], bounds["frontend"])
			}
			if last["process_resident_memory_bytes/selector"] < 1<<20 {
				t.Errorf("the %s selector's resident memory: %v", lang, last["process_resident_memory_bytes/selector"])
			}
		})
	}
}
