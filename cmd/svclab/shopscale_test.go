package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing/postgres"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/load"
)

// TestRunShopReplicasLimits runs the shop on a real PostgreSQL with 2
// replicas of products, each under a CPU and a memory limit: every call
// answers, the calls to products spread over both replicas within ±10%
// (their Prometheus series, by process), and each replica's limits are in
// run.json and its cgroup counters in resources.parquet.
func TestRunShopReplicasLimits(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL; skipped with -short")
	}
	if err := postgres.Check(); err != nil {
		t.Skipf("PostgreSQL cannot run here (install Debian's postgresql; .ci/run does): %v", err)
	}
	if _, err := cgroup.Detect(); err != nil {
		t.Skipf("needs writable cgroups: %v", err)
	}
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus to count each replica's calls with: %v", err)
	}
	const src = `
[app]
name = "shop"
pool_size = 4

[deploy]
placement = "split"
transport = "grpc"
metrics = true
[deploy.replicas]
products = 2
[deploy.resources.products]
cpu = 0.5
memory = "256MiB"

[load]
rate = 60
warmup = "500ms"
duration = "3s"

[experiment]
name = "shopscale"
seed = 1
isolation = "none"
`
	runs, _ := runExperimentWith(t, "shopscale", src, e2eRun{timeout: 150 * time.Second})
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	run := runs[0]
	var rf experiment.RunFile
	readJSONFile(t, filepath.Join(run, "run.json"), &rf)
	if rf.Status != "ok" {
		t.Fatalf("run %s: %s", rf.Status, rf.Reason)
	}
	limited := 0
	for _, p := range rf.Processes {
		if len(p.Components) != 1 || p.Components[0] != "products" {
			continue
		}
		if l := p.Limits; l == nil || l.CPU != 0.5 || l.Memory != 256<<20 {
			t.Errorf("%s limits %+v, want cpu 0.5, memory 256MiB", p.Name, p.Limits)
		}
		limited++
	}
	if limited != 2 {
		t.Errorf("%d products processes in run.json, want 2: %+v", limited, rf.Processes)
	}

	var sum load.Summary
	readJSONFile(t, filepath.Join(run, "summary.json"), &sum)
	for _, op := range sum.Operations {
		if op.Kind == "total" && (op.Count < 100 || op.Errors != 0) {
			t.Errorf("calls: %d, %d failed (%v), want every one answered", op.Count, op.Errors, op.ErrorsByClass)
		}
	}

	res, err := parquet.ReadFile[experiment.ResourceRow](filepath.Join(run, "resources.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]bool{}
	for _, r := range res {
		if r.CFSPeriods != nil && *r.CFSPeriods > 0 && r.CgroupMemBytes != nil && *r.CgroupMemBytes > 0 {
			counted[r.Process] = true
		}
	}
	if !counted["products#0"] || !counted["products#1"] {
		t.Errorf("cgroup counters in resources.parquet for %v, want products#0 and products#1", counted)
	}

	rows, err := parquet.ReadFile[experiment.MetricRow](filepath.Join(run, experiment.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]float64{}
	for _, r := range rows {
		if r.Name == "svclab_requests_total" && r.Component == "products" {
			k := r.Process + " " + r.Method
			served[k] = max(served[k], r.Value)
		}
	}
	per := map[string]float64{}
	for k, v := range served {
		per[k[:len("products#0")]] += v
	}
	// Round robin spreads deterministically, so a few dozen calls each judge
	// ±10%; fewer counted would mean the series lost calls, not a bad spread.
	share := (per["products#0"] + per["products#1"]) / 2
	if share < 30 {
		t.Fatalf("calls to products by replica: %v", per)
	}
	for _, p := range []string{"products#0", "products#1"} {
		if per[p] < 0.9*share || per[p] > 1.1*share {
			t.Errorf("%s served %.0f calls, want %.0f ± 10%% (%v)", p, per[p], share, per)
		}
	}
}
