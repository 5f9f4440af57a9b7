package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

const crashSpec = `
[app]
name = "chain"
hops = 2

[deploy]
transport = "grpc"

[load]
rate = 50
warmup = "300ms"
duration = "1500ms"

[experiment]
name = "crash"
order = "sequential"
seed = 1
[experiment.factors]
"deploy.placement" = ["monolith", "split"]
"deploy.transport" = ["grpc", "http"]
`

func marker(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "SVCLAB_TEST_MARK=" + hex.EncodeToString(b[:])
}

// snapshot reads every file of every committed run.
func snapshot(t *testing.T, runs string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, runs)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func committedRuns(t *testing.T, runs string) (done []string, tmp []string) {
	entries, _ := os.ReadDir(runs)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			tmp = append(tmp, e.Name())
		} else if e.IsDir() {
			done = append(done, e.Name())
		}
	}
	return done, tmp
}

// TestRunKilledAndResumed kills `svclab run` with SIGKILL during its third
// run, then resumes it: the two committed runs must be untouched, the plan
// must complete, no run directory may be partial and no child may survive.
func TestRunKilledAndResumed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	specPath := filepath.Join(dir, "crash.toml")
	if err := os.WriteFile(specPath, []byte(crashSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	mark := marker(t)

	cmd := exec.Command(svclabBin, "run", "--no-report", "--results", results, specPath)
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	// Find the experiment directory, then wait for run 3 to be in flight:
	// two committed runs and a temporary one.
	var expDir string
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("run 3 never started")
		}
		select {
		case err := <-waited:
			t.Fatalf("svclab run ended before the kill: %v", err)
		default:
		}
		if expDir == "" {
			if m, _ := filepath.Glob(filepath.Join(results, "crash-*")); len(m) == 1 {
				expDir = m[0]
			}
		}
		if expDir != "" {
			done, tmp := committedRuns(t, filepath.Join(expDir, "runs"))
			if len(done) == 2 && len(tmp) == 1 {
				break
			}
			if len(done) > 2 {
				_ = cmd.Process.Kill()
				t.Fatal("missed run 3 in flight")
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Let the third run get into its measurement before the kill.
	time.Sleep(700 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	waitNoProcesses(t, mark, 5*time.Second)

	runs := filepath.Join(expDir, "runs")
	done, tmp := committedRuns(t, runs)
	if len(done) != 2 || len(tmp) != 1 {
		t.Fatalf("after the kill: committed %v, in flight %v", done, tmp)
	}
	before := snapshot(t, runs)
	for name := range before {
		if strings.HasPrefix(name, "/.tmp-") {
			delete(before, name)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stdout, stderr, code := svclab(t, ctx, []string{mark}, "run", "--no-report", "--resume", expDir, specPath)
	if code != 0 {
		t.Fatalf("resume exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "2 of 4 runs already committed") || !strings.Contains(stdout, "results: "+expDir) {
		t.Errorf("resume output:\n%s\n%s", stdout, stderr)
	}
	done, tmp = committedRuns(t, runs)
	if len(done) != 4 || len(tmp) != 0 {
		t.Fatalf("after resume: committed %v, left over %v", done, tmp)
	}
	after := snapshot(t, runs)
	for name, b := range before {
		if !reflect.DeepEqual(after[name], b) {
			t.Errorf("%s changed during resume", name)
		}
	}
	for _, id := range done {
		for _, f := range []string{"run.json", "summary.json", "timeseries.parquet", "resources.parquet", "latency.hlog", "service_time.hlog"} {
			if _, err := os.Stat(filepath.Join(runs, id, f)); err != nil {
				t.Errorf("run %s: %v", id, err)
			}
		}
		var rf struct {
			Status, Reason string
			Generator      struct {
				Verdict   string `json:"verdict"`
				HostTimer *struct {
					Samples int64 `json:"samples"`
				} `json:"host_timer"`
			}
		}
		b, _ := os.ReadFile(filepath.Join(runs, id, "run.json"))
		if err := json.Unmarshal(b, &rf); err != nil || rf.Status != "ok" {
			t.Errorf("run %s: status %q reason %q (%v)", id, rf.Status, rf.Reason, err)
		}
		// Each run's audit was judged against a calibrated host timer,
		// the resumed ones too.
		if g := rf.Generator; g.Verdict == "" || g.HostTimer == nil || g.HostTimer.Samples < 100 {
			t.Errorf("run %s: generator %+v: want a verdict against the host timer", id, g)
		}
	}
	var ef struct {
		HostTimer *struct {
			Samples int64   `json:"samples"`
			P99Ms   float64 `json:"p99_ms"`
		} `json:"host_timer"`
	}
	b, _ := os.ReadFile(filepath.Join(expDir, "experiment.json"))
	if err := json.Unmarshal(b, &ef); err != nil || ef.HostTimer == nil || ef.HostTimer.Samples < 100 || ef.HostTimer.P99Ms <= 0 {
		t.Errorf("experiment.json host_timer %+v (%v): want the host timer's calibration", ef.HostTimer, err)
	}
	if !strings.Contains(stderr, "host timer (") {
		t.Errorf("resume printed no host timer line:\n%s", stderr)
	}
	waitNoProcesses(t, mark, 5*time.Second)

	// A changed spec cannot be resumed.
	if err := os.WriteFile(specPath, []byte(crashSpec+"\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = svclab(t, ctx, nil, "run", "--no-report", "--resume", expDir, specPath)
	if code != 2 || !strings.Contains(stderr, "have changed since the experiment") {
		t.Errorf("resume with an edited spec: exit %d, %s", code, stderr)
	}
}

// TestRunFailedComponentIsRecorded makes every run with a third hop crash at
// start: those runs are marked failed with the reason and the host's stderr
// tail, and the runs without it still succeed.
func TestRunFailedComponentIsRecorded(t *testing.T) {
	t.Parallel()
	src := strings.NewReplacer(`name = "crash"`, `name = "fail"`,
		`"deploy.transport" = ["grpc", "http"]`, `"app.hops" = [2, 3]`).Replace(crashSpec)
	runs, stderr := runExperimentWith(t, "fail", src, e2eRun{env: []string{"SVCLAB_FAIL_COMPONENT=hop3"}})
	if !strings.Contains(stderr, "4 runs: 2 ok, 2 failed") {
		t.Errorf("summary line missing:\n%s", stderr)
	}
	m := runFiles(t, runs, 4)
	for _, p := range m {
		var rf struct {
			Status, Reason string
			Levels         map[string]any
			StderrTail     map[string]string `json:"stderr_tail"`
		}
		b, _ := os.ReadFile(p)
		if err := json.Unmarshal(b, &rf); err != nil {
			t.Fatal(err)
		}
		hops := rf.Levels["app.hops"].(float64)
		switch {
		case hops == 2 && rf.Status != "ok":
			t.Errorf("%s: 2 hops failed: %s", p, rf.Reason)
		case hops == 3 && (rf.Status != "failed" || !strings.Contains(rf.Reason, "hop3")):
			t.Errorf("%s: 3 hops: status %q reason %q", p, rf.Status, rf.Reason)
		}
		if hops == 3 && !strings.Contains(rf.Reason+strings.Join(mapValues(rf.StderrTail), ""), "SVCLAB_FAIL_COMPONENT") {
			t.Errorf("%s: the host's stderr is not recorded: %+v", p, rf)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestRunThresholds runs an experiment whose every run breaks a threshold
// no real call meets (p50 under a nanosecond) and one that holds: the first
// exits 99 with the breach in each run.json, and with abort_on_fail stops
// after its first run; the second exits 0.
func TestRunThresholds(t *testing.T) {
	t.Parallel()
	const base = `
[app]
name = "chain"
hops = 2

[deploy]
transport = "grpc"

[load]
rate = 50
warmup = "200ms"
duration = "800ms"

[experiment]
name = "th"
order = "sequential"
seed = 1
[experiment.factors]
"deploy.placement" = ["monolith", "split"]
`
	for _, tc := range []struct {
		name       string
		thresholds string
		code       int
		runs       int // run.json files written
		breached   bool
	}{
		{"broken", "[load.thresholds]\np50_ms = 0.000001\n", 99, 2, true},
		{"abort", "[load.thresholds]\np50_ms = 0.000001\nabort_on_fail = true\n", 99, 1, true},
		{"held", "[load.thresholds]\nerror_rate = 0.5\n", 0, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, stderr := runExperimentWith(t, "th", base+tc.thresholds, e2eRun{code: tc.code})
			m := runFiles(t, runs, tc.runs)
			for _, p := range m {
				var rf struct {
					Status     string
					Thresholds []string
				}
				b, _ := os.ReadFile(p)
				if err := json.Unmarshal(b, &rf); err != nil {
					t.Fatal(err)
				}
				if rf.Status != "ok" {
					t.Errorf("%s: status %q", p, rf.Status)
				}
				if got := len(rf.Thresholds) > 0; got != tc.breached {
					t.Errorf("%s: thresholds %q, want breached=%v", p, rf.Thresholds, tc.breached)
				}
				if tc.breached && !strings.Contains(strings.Join(rf.Thresholds, ""), "p50_ms") {
					t.Errorf("%s: breach does not name p50_ms: %q", p, rf.Thresholds)
				}
			}
			if tc.name == "abort" && !strings.Contains(stderr, "--resume") {
				t.Errorf("an aborted experiment does not say how to continue:\n%s", stderr)
			}
		})
	}
}

// TestRunWithoutRequestsFails plans a run whose open loop sends nothing in
// its window (one arrival every 4 s, a 1 s window after a 1 s warm-up):
// it is marked failed with a reason that says what to change, rather than
// ok with no latency to analyse, and the other run is unaffected.
func TestRunWithoutRequestsFails(t *testing.T) {
	t.Parallel()
	src := `
[app]
name = "chain"
hops = 1

[load]
warmup = "1s"
duration = "1s"

[experiment]
name = "empty"
order = "sequential"
seed = 1
[experiment.factors]
"load.rate" = [0.25, 20]
`
	runs, stderr := runExperimentWith(t, "empty", src, e2eRun{})
	if !strings.Contains(stderr, "2 runs: 1 ok, 1 failed") {
		t.Errorf("summary line missing:\n%s", stderr)
	}
	m := runFiles(t, runs, 2)
	for _, p := range m {
		var rf struct {
			Status, Reason string
			Levels         map[string]any
		}
		b, _ := os.ReadFile(p)
		if err := json.Unmarshal(b, &rf); err != nil {
			t.Fatal(err)
		}
		rate := rf.Levels["load.rate"].(float64)
		switch {
		case rate == 20 && rf.Status != "ok":
			t.Errorf("%s: 20 req/s: status %q: %s", p, rf.Status, rf.Reason)
		case rate < 1 && (rf.Status != "failed" || !strings.Contains(rf.Reason, "no request completed") || !strings.Contains(rf.Reason, "load.duration")):
			t.Errorf("%s: 0.25 req/s: status %q reason %q", p, rf.Status, rf.Reason)
		}
	}
}
