package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/tempdir"
)

// exitThresholds is the exit status of a run whose load.thresholds were
// broken, as the root command's help documents it.
const exitThresholds = 99

// svclabBin is the binary the end-to-end tests run: $SVCLAB_BIN (the
// Makefile sets it to bin/svclab) or one built once for this test binary.
var svclabBin string

// Most tests here call t.Parallel: they wait on svclab runs far more than
// they compute, so several at once take the package from minutes to about
// one. Those that measure time closely (a capacity found within 15%, the
// window's host timer, fault windows timed to a few hundred ms) do not, so
// go test runs them first, alone; make test runs them on a quiet machine
// (TIMED_CLI in the Makefile) and the rest beside other packages.
func TestMain(m *testing.M) {
	code := func() int {
		if b := os.Getenv("SVCLAB_BIN"); b != "" {
			svclabBin = b
			return m.Run()
		}
		// Under the process's owner-marked temp root, so that a killed
		// test binary's build is swept by the next svclab start.
		dir, err := tempdir.MkdirTemp("bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer tempdir.RemoveOwn()
		svclabBin = filepath.Join(dir, "svclab")
		out, err := exec.Command("go", "build", "-o", svclabBin, ".").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build svclab: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// svclab runs the binary to completion and returns stdout, stderr and the
// exit code.
func svclab(t *testing.T, ctx context.Context, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, svclabBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("svclab %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), code
}

// processesWithEnv lists the PIDs of live processes whose environment holds
// the exact entry kv; a test marks what it starts with a unique one.
func processesWithEnv(kv string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && isZombie(st) {
					break
				}
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitNoProcesses waits up to d for every process marked kv to be gone.
func waitNoProcesses(t *testing.T, kv string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		pids := processesWithEnv(kv)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still alive %s after the kill: %v", d, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runExperiment runs the experiment src (named name) with svclab run,
// expects n runs and returns their directories and svclab's stderr; no
// process of it outlives it.
func runExperiment(t *testing.T, name, src string, n int) ([]string, string) {
	t.Helper()
	runs, stderr := runExperimentWith(t, name, src, e2eRun{})
	if len(runs) != n {
		t.Fatalf("%d runs, want %d\n%s", len(runs), n, stderr)
	}
	return runs, stderr
}

// e2eRun is what a test may change of runExperimentWith's run.
type e2eRun struct {
	timeout time.Duration // 90 s when zero
	env     []string      // beside the marker
	// mark is the environment that marks the run's processes, for a
	// test that watches them during the run; marker(t)'s when empty.
	mark string
	code int  // the exit status wanted
	any  bool // any exit status will do
}

// runExperimentWith runs the experiment src, named name, with svclab run
// --no-report, as o says, checks its exit status and that no process of
// it outlives it, and returns the directories of its committed runs and
// svclab's stderr.
func runExperimentWith(t *testing.T, name, src string, o e2eRun) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	specPath := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(specPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(o.timeout, 90*time.Second))
	defer cancel()
	mark := cmp.Or(o.mark, marker(t))
	stdout, stderr, code := svclab(t, ctx, append([]string{mark}, o.env...), "run", "--no-report", "--results", filepath.Join(dir, "results"), specPath)
	if code != o.code && !o.any {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, o.code, stdout, stderr)
	}
	waitNoProcesses(t, mark, 5*time.Second)
	runs, _ := filepath.Glob(filepath.Join(dir, "results", name+"-*", "runs", "*"))
	return runs, stderr
}

// runFiles is the run.json of each run of runs, which must be n.
func runFiles(t *testing.T, runs []string, n int) []string {
	t.Helper()
	if len(runs) != n {
		t.Fatalf("%d runs, want %d: %v", len(runs), n, runs)
	}
	files := make([]string, len(runs))
	for i, r := range runs {
		files[i] = filepath.Join(r, "run.json")
	}
	return files
}
