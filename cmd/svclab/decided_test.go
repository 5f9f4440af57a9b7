package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunUntilDecided runs a sequential experiment with the analysis
// deciding after each block: it stops when decided or at max_runs, says
// which, and experiment.json records it with the runs of the blocks
// begun, every block holding each design point once; a resume of the
// stopped experiment runs nothing.
func TestRunUntilDecided(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("deploys services")
	}
	// The binary finds the analysis in $SVCLAB_VENV or beside itself.
	venv := os.Getenv("SVCLAB_VENV")
	if venv == "" {
		venv = filepath.Join(filepath.Dir(filepath.Dir(svclabBin)), ".venv")
	}
	if _, err := os.Stat(filepath.Join(venv, "bin", "svclab-analysis")); err != nil {
		t.Skipf("needs the analysis (make venv): %v", err)
	}
	dir := t.TempDir()
	// A large payload costs each hop far more than 10%: the question
	// fails its margin, decidedly, after a few blocks.
	specPath := writeSpecFile(t, dir, "seq.toml", `[app]
name = "chain"
hops = 2
[load]
rate = 50
warmup = "300ms"
duration = "1s"
[experiment]
until = "decided"
max_runs = 24
response = "p50_ms"
[[experiment.questions]]
name = "payload cost"
effect = "app.payload"
margin = 1.10
[experiment.factors]
"app.payload" = ["small", "large"]
`)
	results := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	mark := marker(t)
	_, stderr, code := svclab(t, ctx, []string{mark}, "run", "--no-report", "--results", results, specPath)
	waitNoProcesses(t, mark, 5*time.Second)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	stores, _ := filepath.Glob(filepath.Join(results, "seq-*"))
	if len(stores) != 1 {
		t.Fatalf("stores %v", stores)
	}
	b, err := os.ReadFile(filepath.Join(stores[0], "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ef struct {
		Stopped *struct {
			Reason       string
			Blocks, Runs int
		}
		Runs []struct {
			Repetition int
			Levels     map[string]any
		}
	}
	if err := json.Unmarshal(b, &ef); err != nil {
		t.Fatal(err)
	}
	st := ef.Stopped
	if st == nil || (st.Reason != "decided" && (st.Reason != "budget" || st.Blocks != 12)) || st.Runs != 2*st.Blocks || len(ef.Runs) != st.Runs {
		t.Fatalf("stopped %+v with %d runs listed; want decided, or budget at 12 blocks", st, len(ef.Runs))
	}
	t.Logf("stopped: %+v", *st)
	for b := 0; b < st.Blocks; b++ {
		x, y := ef.Runs[2*b], ef.Runs[2*b+1]
		if x.Repetition != b+1 || y.Repetition != b+1 || x.Levels["app.payload"] == y.Levels["app.payload"] {
			t.Errorf("block %d: %+v, %+v; want each payload once, repetition %d", b+1, x, y, b+1)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(stores[0], "runs", "r*"))
	if len(runs) != st.Runs {
		t.Errorf("%d runs committed, stopped says %d", len(runs), st.Runs)
	}
	for _, want := range []string{fmt.Sprintf("block %d of at most 12: ", st.Blocks), "payload cost: ", fmt.Sprintf("stopped after %d blocks (%d runs): ", st.Blocks, st.Runs)} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	// A resume of a stopped experiment runs nothing, counts the runs it
	// keeps and writes the report again.
	stdout, stderr, code := svclab(t, ctx, []string{mark, "SVCLAB_VENV=" + venv}, "run", "--resume", stores[0], specPath)
	kept := fmt.Sprintf("%d runs: 0 ok, 0 failed, %d kept from before", len(ef.Runs), st.Runs)
	if code != 0 || !strings.Contains(stderr, "stopped before, after") || !strings.Contains(stderr, kept) {
		t.Errorf("resume of a stopped experiment: exit %d, want 0 and %q:\n%s", code, kept, stderr)
	}
	if !strings.Contains(stdout, "report: ") {
		t.Errorf("the resume wrote no report:\n%s", stdout)
	} else if _, err := os.Stat(filepath.Join(stores[0], "report.md")); err != nil {
		t.Errorf("the resume's report: %v", err)
	}
	if again, _ := filepath.Glob(filepath.Join(stores[0], "runs", "r*")); len(again) != len(runs) {
		t.Errorf("the resume ran %d runs more", len(again)-len(runs))
	}
}

// TestResumeDecidedRaisedBudget: a sequential experiment that spent its
// budget goes on when a resume raises it, from the block after the last,
// and stops again within the new budget; under the old one a resume says
// what to raise.
func TestResumeDecidedRaisedBudget(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("deploys services")
	}
	venv := os.Getenv("SVCLAB_VENV")
	if venv == "" {
		venv = filepath.Join(filepath.Dir(filepath.Dir(svclabBin)), ".venv")
	}
	if _, err := os.Stat(filepath.Join(venv, "bin", "svclab-analysis")); err != nil {
		t.Skipf("needs the analysis (make venv): %v", err)
	}
	dir := t.TempDir()
	// Two blocks cannot decide: a confidence sequence at 95% needs four
	// for a finite interval. The budget stops it after two.
	specPath := writeSpecFile(t, dir, "seq.toml", `[app]
name = "chain"
hops = 2
[load]
rate = 50
warmup = "300ms"
duration = "1s"
[experiment]
until = "decided"
max_runs = 4
response = "p50_ms"
[[experiment.questions]]
name = "payload cost"
effect = "app.payload"
margin = 1.10
[experiment.factors]
"app.payload" = ["small", "large"]
`)
	results := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	mark := marker(t)
	_, stderr, code := svclab(t, ctx, []string{mark}, "run", "--no-report", "--results", results, specPath)
	waitNoProcesses(t, mark, 5*time.Second)
	if code != 0 || !strings.Contains(stderr, "stopped after 2 blocks (4 runs): the budget is spent") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	// It was warned of before the first run.
	warned := strings.Index(stderr, `warning: question "payload cost" cannot be decided within the budget: its confidence sequences need 4 usable blocks`)
	if first := strings.Index(stderr, "block 1 of at most 2"); warned < 0 || first >= 0 && first < warned || !strings.Contains(stderr, "raise experiment.max_runs to 8") {
		t.Errorf("no warning of the budget before the runs:\n%s", stderr)
	}
	stores, _ := filepath.Glob(filepath.Join(results, "seq-*"))
	if len(stores) != 1 {
		t.Fatalf("stores %v", stores)
	}
	count := func() int {
		runs, _ := filepath.Glob(filepath.Join(stores[0], "runs", "r*"))
		return len(runs)
	}

	_, stderr, code = svclab(t, ctx, []string{mark}, "run", "--no-report", "--resume", stores[0], specPath)
	if code != 0 || !strings.Contains(stderr, "raise experiment.max_runs or experiment.budget to continue") || count() != 4 {
		t.Errorf("resume under the spent budget: exit %d, %d runs:\n%s", code, count(), stderr)
	}

	_, stderr, code = svclab(t, ctx, []string{mark}, "run", "--no-report", "--resume", stores[0], "--set", "experiment.max_runs=8", specPath)
	waitNoProcesses(t, mark, 5*time.Second)
	for _, want := range []string{"the budget changed since", "(max_runs 4 → 8)", "continuing after block 2", "block 4 of at most 4: ", "stopped after 4 blocks (8 runs): "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("resume with max_runs raised: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "cannot be decided within the budget") {
		t.Errorf("resume with max_runs raised to the 4 blocks needed: warned:\n%s", stderr)
	}
	if code != 0 || count() != 8 {
		t.Errorf("resume with max_runs raised: exit %d, %d runs committed, want 8", code, count())
	}
	b, err := os.ReadFile(filepath.Join(stores[0], "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ef struct {
		Overrides []string
		Stopped   struct{ Blocks, Runs int }
	}
	if err := json.Unmarshal(b, &ef); err != nil {
		t.Fatal(err)
	}
	if ef.Stopped.Blocks != 4 || len(ef.Overrides) != 1 || ef.Overrides[0] != "experiment.max_runs=8" {
		t.Errorf("experiment.json: stopped %+v, overrides %q", ef.Stopped, ef.Overrides)
	}
}
