package main

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/experiment"
)

// TestRunAutoscaleMetrics runs an autoscaled group with deploy.metrics:
// the replica the autoscaler adds is scraped by the run's Prometheus (its
// targets follow the endpoint set), so metrics.parquet has its series,
// named by its process, with the calls it served.
func TestRunAutoscaleMetrics(t *testing.T) {
	t.Parallel()
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus to scrape with: %v", err)
	}
	const src = `
[app]
name = "chain"
payload = "large"

[deploy]
placement = "split"
metrics = true
[deploy.autoscale.hop3]
min = 1
max = 2
cpu_target = 1
sync_period = "200ms"

[load]
rate = 100
warmup = "200ms"
duration = "8s"

[experiment]
name = "sm"
seed = 1
`
	// 8 s: the added replica must start, join the endpoint set, be
	// found by Prometheus and scraped with calls served, within the
	// window; in 4 s, beside make test's last step (both cores busy), it
	// once was not (2026-11-29).
	runs, stderr := runExperimentWith(t, "sm", src, e2eRun{timeout: 120 * time.Second})
	if !regexp.MustCompile(`run 1/1 \S+: prometheus http://127\.0\.0\.1:\d+\n`).MatchString(stderr) {
		t.Errorf("svclab run did not say where the run's Prometheus is:\n%s", stderr)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	rows, err := parquet.ReadFile[experiment.MetricRow](filepath.Join(runs[0], experiment.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]float64{} // process → its last svclab_requests_total of hop3
	instances := map[string]string{}
	for _, r := range rows {
		if r.Name == "svclab_requests_total" && r.Component == "hop3" {
			served[r.Process] = max(served[r.Process], r.Value)
			instances[r.Process] = r.Instance
		}
	}
	if served["hop3#0"] <= 0 || served["hop3#1"] <= 0 {
		t.Errorf("hop3's calls per process in metrics.parquet: %v; want the first replica's and the one the autoscaler added (hop3#1)", served)
	}
	if instances["hop3#0"] == instances["hop3#1"] {
		t.Errorf("both replicas scraped at one instance %q", instances["hop3#0"])
	}
}
