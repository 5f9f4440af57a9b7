package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/experiment"
)

// TestExecRunAutoscale: [deploy.autoscale] over a program that keeps a
// thread busy scales it out behind its front during `svclab run`, as it
// does svclab's own hosts: the decisions are in scaling.parquet, the
// replica it added is in run.json and sampled in resources.parquet, and
// the load's calls go on without errors.
func TestExecRunAutoscale(t *testing.T) {
	t.Parallel()
	needPrograms(t, "python3")
	const src = `
[app]
name = "exec"
entry = "web"
[app.components.web]
command = ["python3", "-c", '''
import http.server, sys, threading
threading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers(); self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
''', "{port}"]
protocol = "http"
[deploy.autoscale.web]
min = 1
max = 2
cpu_target = 1
sync_period = "500ms"
[load]
rate = 20
warmup = "200ms"
duration = "9s"
[load.request]
path = "/"
[experiment]
name = "xs"
`
	// 9 s: the replica the autoscaler adds after its first periods must
	// start (a Python interpreter) and live through a few of the
	// sampler's seconds, on a busy machine too: at 3 s, beside the other
	// CLI tests, it was added too late once; at 6 s, in a make test whose
	// last step also compiled, the decision was made but the replica was
	// not up before the window ended (2026-11-29).
	// cpu_target 1%, as the other autoscale tests have: a busy thread's
	// share of a core depends on the machine, and CI's, beside the other
	// tests, once gave it 6–19% against a target of 20 (2026-11-29), so
	// the group never left the tolerance. At 1% any share above 1.1%
	// scales it out, and the thread keeps the share above that.
	runs, _ := runExperiment(t, "xs", src, 1)
	run := runs[0]
	var rf struct {
		Status    string
		Reason    string
		Processes []struct{ Name string }
	}
	b, err := os.ReadFile(filepath.Join(run, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range rf.Processes {
		names = append(names, p.Name)
	}
	if want := []string{"loadgen", "web#0", "web#1"}; rf.Status != "ok" || !slices.Equal(names, want) {
		t.Errorf("status %s (%s), processes %v, want ok and %v", rf.Status, rf.Reason, names, want)
	}
	rows, err := parquet.ReadFile[experiment.ScalingRow](filepath.Join(run, "scaling.parquet"))
	if err != nil {
		t.Fatalf("the autoscaler's decisions: %v", err)
	}
	if !slices.ContainsFunc(rows, func(r experiment.ScalingRow) bool {
		return r.Group == "web" && r.Metric == "cpu" && r.Current == 1 && r.Desired == 2
	}) {
		t.Errorf("no scale-up of web from 1 to 2 in scaling.parquet: %+v", rows)
	}
	res, err := parquet.ReadFile[experiment.ResourceRow](filepath.Join(run, "resources.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res, func(r experiment.ResourceRow) bool { return r.Process == "web#1" }) {
		t.Error("the added replica web#1 was not sampled in resources.parquet")
	}
	if sum := readSummary(t, run); sum.Operations[0].Errors != 0 {
		t.Errorf("%d of %d calls failed while web scaled; the first of each kind: %v", sum.Operations[0].Errors, sum.Operations[0].Count, sum.Operations[0].ErrorExamples)
	}
}
