package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/experiment"
)

// TestExecRunMesh: `svclab run` of the exec test system with Envoy
// sidecars over mutual TLS, two replicas of nginx, deploy.tracing and
// deploy.metrics: the proxies' spans are the run's traces, whose per-hop
// breakdown shows the hop from the frontend to nginx (the frontend hands
// on traceparent), and the proxies' stats are its series, which count the
// frontend's calls to nginx, spread over both replicas' proxies.
func TestExecRunMesh(t *testing.T) {
	t.Parallel()
	needPrograms(t, "python3", "redis-server", "nginx", "prometheus")
	k, _ := sidecar.Lookup("envoy")
	if _, err := k.Binary(); err != nil {
		t.Skip(err)
	}
	mark := marker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	defer waitNoProcesses(t, mark, 10*time.Second)
	stdout, stderr, code := svclab(t, ctx, []string{mark}, "run", "--results", t.TempDir(), "--no-report",
		"--set", `deploy.sidecar="envoy"`, "--set", "deploy.mtls=true", "--set", "deploy.tracing=1.0", "--set", "deploy.metrics=true",
		"--set", "deploy.replicas.static=2", "--set", "load.warmup=500ms", "--set", "load.duration=2s", "--set", "load.rate=20",
		execSystem)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, lastLines(stderr, 30))
	}
	dir := resultsDir(t, stdout)
	checkRunsOK(t, dir)
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	run := runs[0]
	var file experiment.RunFile
	b, err := os.ReadFile(filepath.Join(run, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	sum := readSummary(t, run)
	if file.Traces == nil || file.Traces.Traces < int(sum.Operations[0].Count) || file.Traces.Orphans != 0 || file.Traces.Unanswered != 0 {
		t.Errorf("run.json's traces %+v, want a trace per request (%d), no span lost", file.Traces, sum.Operations[0].Count)
	}
	hops, err := parquet.ReadFile[experiment.HopRow](filepath.Join(run, experiment.TracesFile))
	if err != nil {
		t.Fatal(err)
	}
	byHop := map[string]int{}
	for _, h := range hops {
		byHop[h.Hop]++
	}
	if byHop["client→frontend"] == 0 || byHop["frontend→static"] != byHop["client→frontend"] {
		t.Errorf("hops %v: want every request's client→frontend and frontend→static", byHop)
	}
	rows, err := parquet.ReadFile[experiment.MetricRow](filepath.Join(run, experiment.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	// The frontend's proxy's calls to static, as its last scrape counted
	// them; and static's replicas' proxies each served some.
	last := map[string]float64{}
	for _, r := range rows {
		if r.Name == "envoy_cluster_upstream_rq_total" {
			k := r.Group + "→" + r.Component + " " + r.Process
			last[k] = max(last[k], r.Value)
		}
	}
	if last["frontend→static frontend.envoy-http1.1"] < float64(sum.Operations[0].Count) {
		t.Errorf("the frontend's proxy counted %g calls to static, want at least the %d requests measured: %v", last["frontend→static frontend.envoy-http1.1"], sum.Operations[0].Count, last)
	}
	for _, p := range []string{"static→static static#0.envoy", "static→static static#1.envoy"} {
		if last[p] == 0 {
			t.Errorf("%s served no call: %v", p, last)
		}
	}
}

// resultsDir is the experiment's directory, which svclab run prints on
// its results: line.
func resultsDir(t *testing.T, stdout string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^results: (.+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no 'results:' line in stdout:\n%s", stdout)
	}
	return strings.TrimSpace(m[1])
}
