package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// replicationSmoke is a seconds-long variant of one replication spec:
// r = 2, short runs, and fewer levels where a factor has many.
type replicationSmoke struct {
	key, spec string
	sets      []string
	// factors the report must name, with their levels as run.
	factors map[string][]string
}

var replicationSmokes = []replicationSmoke{
	{
		key: "s3", spec: "s3-style.toml",
		// Python for Java: its hosts start in a second, JVMs in ten or
		// more on a loaded machine; the design and its aliasing are the
		// spec's (internal/deploy/local's tests deploy Java). 2 req/s:
		// the Python host decodes a LargeSize JSON array in about 1.7 s,
		// one at a time, so faster arrivals would time out; and beside
		// other tests (make test-cli) a decode took over the spec's
		// timeout, failing a 2-request run: this test checks the
		// pipeline, not the latency, so it sends few requests per run and
		// waits 30 s for each. The window must let each operation finish
		// once: a 1.5 s one beside other tests once ended before the
		// Python host's first LargeSize answer, and an operation with no
		// answer in a run has no latency for the tables to analyse.
		sets: []string{"load.rate=2", "load.timeout=30s", "load.duration=4s", `experiment.factors."deploy.languages.frontend"=["go","python"]`,
			`experiment.factors."deploy.languages.selector"=["go","python"]`},
		factors: map[string][]string{
			"deploy.languages.frontend": {"go", "python"},
			"deploy.transport":          {"grpc", "http"},
			"app.size":                  {"std", "large"},
		},
	},
	{
		key: "s0", spec: "s0-granularity.toml",
		// A closed loop through five hops: beside other tests a 500 ms
		// window, and once a 1.5 s one after a 100 ms warm-up, completed no
		// call, which fails the run; three calls warm it first.
		sets: []string{`experiment.factors."load.users"=[2,8]`, "load.warmup_calls=3", "load.warmup=10s", "load.duration=1500ms"},
		factors: map[string][]string{
			"deploy.placement": {"monolith", "two", "split"},
			"load.users":       {"2", "8"},
			"deploy.transport": {"grpc", "protorpc"},
		},
	},
	{
		key: "s4", spec: "s4-rpc.toml",
		// One closed-loop user: beside other tests the first call of a run
		// once outlasted a 500 ms window, so three calls warm it first.
		sets: []string{`experiment.factors."app.string_len"=[2,1024]`, "load.warmup_calls=3", "load.warmup=10s", "load.duration=1500ms"},
		factors: map[string][]string{
			"deploy.transport": {"grpc", "netrpc", "protorpc"},
			"app.string_len":   {"2", "1024"},
		},
	},
	{
		key: "s2", spec: "s2-payload.toml",
		// Poisson arrivals at 10 req/s: a 500 ms window holds none one
		// time in 150, which fails the run (seen in a cold make test).
		sets: []string{"load.duration=1500ms"},
		factors: map[string][]string{
			"load.rate":        {"10", "100"},
			"app.payload":      {"small", "large"},
			"deploy.transport": {"grpc", "http"},
		},
	},
}

// analysisVenv finds the virtualenv with svclab-analysis: $SVCLAB_VENV (the
// Makefile sets it) or the checkout's .venv.
func analysisVenv() string {
	cands := []string{os.Getenv("SVCLAB_VENV"), filepath.Join("..", "..", ".venv")}
	for _, v := range cands {
		if v == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(v, "bin", "svclab-analysis")); err == nil && !fi.IsDir() {
			abs, err := filepath.Abs(v)
			if err == nil {
				return abs
			}
		}
	}
	return ""
}

// The replication specs' smoke runs are the package's longest test (its
// four specs 30-100 s each): this file, read first, starts them before
// the other parallel tests, not when a slot frees after them.

// TestReplicationSpecsSmoke runs a short variant of each replication spec
// in experiments/ through the whole pipeline (plan, deploy, load, store,
// report), checks that every run committed ok and that the report names
// every factor and level, then generates docs/REPLICATIONS.md's regions
// from the four results directories.
func TestReplicationSpecsSmoke(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs four experiments (about a minute); skipped with -short")
	}
	venv := analysisVenv()
	if venv == "" {
		t.Skip("svclab-analysis not found ($SVCLAB_VENV or ../../.venv): run 'make venv' or 'make test'; the replication smoke tests need the report")
	}
	root := t.TempDir()
	var mu sync.Mutex
	dirs := map[string]string{}
	// Two at a time, the longest first, in this test's own goroutines:
	// each run waits on its deployment and on the report's Python, so
	// pairs overlap well. As parallel subtests they waited for a slot
	// behind every other parallel test of the package, and s3 (100 s)
	// then ran alone as the package's last 100 s (2026-11-29).
	t.Run("specs", func(t *testing.T) {
		lanes := make(chan struct{}, 2)
		var wg sync.WaitGroup
		for _, sm := range replicationSmokes {
			lanes <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-lanes }()
				t.Run(sm.key, func(t *testing.T) {
					dir := smokeOne(t, sm, root, venv)
					mu.Lock()
					dirs[sm.key] = dir
					mu.Unlock()
				})
			}()
		}
		wg.Wait()
	})
	t.Run("tables", func(t *testing.T) {
		if len(dirs) != len(replicationSmokes) {
			t.Skip("not every spec produced results")
		}
		args := []string{"-m", "svclab_analysis.replications", "--stdout", "--results", root}
		for _, sm := range replicationSmokes {
			args = append(args, sm.key+"="+dirs[sm.key])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("python %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, sm := range replicationSmokes {
			region := regexp.MustCompile(`(?s)<!-- BEGIN ` + sm.key + ` -->\n(.*?)<!-- END ` + sm.key + ` -->`).FindSubmatch(out)
			if region == nil {
				t.Errorf("no %s region in the generated tables:\n%s", sm.key, out)
				continue
			}
			if !strings.Contains(string(region[1]), filepath.Base(dirs[sm.key])) || !strings.Contains(string(region[1]), "planned runs ok") {
				t.Errorf("%s region does not describe %s:\n%s", sm.key, dirs[sm.key], region[1])
			}
		}
	})
}

// smokeOne runs one short variant through svclab run and svclab report and
// returns its results directory.
func smokeOne(t *testing.T, sm replicationSmoke, root, venv string) string {
	mark := marker(t)
	env := []string{mark, "SVCLAB_VENV=" + venv}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	defer waitNoProcesses(t, mark, 10*time.Second)

	spec := filepath.Join("..", "..", "experiments", sm.spec)
	args := []string{"run", "--no-report", "--results", root,
		"--set", "experiment.repetitions=2",
		"--set", "load.warmup=100ms", "--set", "load.duration=500ms"}
	for _, s := range sm.sets {
		args = append(args, "--set", s)
	}
	args = append(args, spec)
	start := time.Now()
	stdout, stderr, code := svclab(t, ctx, env, args...)
	if code != 0 {
		t.Fatalf("svclab %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, lastLines(stderr, 30))
	}
	m := regexp.MustCompile(`(?m)^results: (.+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no 'results:' line in stdout:\n%s", stdout)
	}
	dir := strings.TrimSpace(m[1])
	checkRunsOK(t, dir)

	stdout, stderr, code = svclab(t, ctx, env, "report", dir)
	if code != 0 {
		t.Fatalf("svclab report %s: exit %d\n%s\n%s", dir, code, stdout, lastLines(stderr, 30))
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatalf("report.md: %v", err)
	}
	for name, levels := range sm.factors {
		row := regexp.MustCompile(`(?m)^\| [A-Z] \| ` + regexp.QuoteMeta(name) + ` \| ([^|]*) \|`).FindSubmatch(md)
		if row == nil {
			t.Errorf("report.md has no factor row for %s", name)
			continue
		}
		for _, lv := range levels {
			if !strings.Contains(", "+string(row[1])+",", " "+lv+",") {
				t.Errorf("report.md: factor %s lacks level %q (row: %s)", name, lv, row[0])
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Errorf("report.html: %v", err)
	}
	t.Logf("%s: pipeline and report in %s", sm.key, time.Since(start).Round(100*time.Millisecond))
	return dir
}

// checkRunsOK checks that every planned run of a results directory is
// committed with status ok.
func checkRunsOK(t *testing.T, dir string) {
	t.Helper()
	var exp struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
		HostTimer *struct {
			Samples int64   `json:"samples"`
			P99Ms   float64 `json:"p99_ms"`
		} `json:"host_timer"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "experiment.json"))
	if err != nil {
		t.Fatalf("experiment.json: %v", err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatalf("experiment.json: %v", err)
	}
	if len(exp.Runs) == 0 {
		t.Fatalf("%s: the plan has no runs", dir)
	}
	if exp.HostTimer == nil || exp.HostTimer.Samples < 100 || exp.HostTimer.P99Ms <= 0 {
		t.Errorf("%s: experiment.json host_timer %+v: want the host timer's calibration", dir, exp.HostTimer)
	}
	for _, r := range exp.Runs {
		var run struct {
			Status, Reason string
			Generator      *struct {
				Verdict   string          `json:"verdict"`
				HostTimer json.RawMessage `json:"host_timer"`
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "runs", r.ID, "run.json"))
		if err != nil {
			t.Errorf("run %s: %v", r.ID, err)
			continue
		}
		if err := json.Unmarshal(b, &run); err != nil {
			t.Errorf("run %s: %v", r.ID, err)
			continue
		}
		if run.Status != "ok" {
			t.Errorf("run %s: status %q: %s", r.ID, run.Status, run.Reason)
		}
		if g := run.Generator; g == nil || g.Verdict == "" || len(g.HostTimer) == 0 {
			t.Errorf("run %s: generator %+v: want a verdict judged against the host timer", r.ID, g)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
