package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// exampleDir is the example module that TestOutsideModule builds: an app
// of its own on its own services, through the public API only.
var exampleDir = filepath.Join("..", "..", "examples", "orders")

// TestOutsideModule builds examples/orders as a module outside this
// repository would (a copy in a temp dir, svclab replaced by this checkout,
// dependencies from the module cache or $GOPROXY), and runs its own svclab
// binary: a bad [app] value is refused at its line by the app's own
// Validate, and `run` deploys the app in one process and split into three
// over grpc. The report names the spec's question, and its CPU table
// shows the split costing measurably more CPU per request than the
// monolith, whose calls between components are inproc.
func TestOutsideModule(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a module and runs an experiment (about a minute); skipped with -short")
	}
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod := copyModule(t, exampleDir, checkout)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "orderslab")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = mod
	// -mod=readonly, as a user's copy builds: a go.mod or go.sum that
	// lacks what svclab now needs fails here (it once did for a user,
	// while -mod=mod here filled it in). GOWORK=off keeps a go.work above
	// the temp dir out, as for any outside module. The caller's GOFLAGS
	// stay: make test's -trimpath lets the build cache's svclab packages
	// serve a new clone (without it, about 10 CPU-s of compiles a clone).
	build.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly"), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s (a copy of %s): %v\n%s\n(if go.mod or go.sum lacks an entry: cd %s && GOFLAGS=-mod=mod go mod tidy)", mod, exampleDir, err, out, exampleDir)
	}

	mark := marker(t)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), mark, "SVCLAB_VENV="+analysisVenv())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return stdout.String(), stderr.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
		}
		return stdout.String(), stderr.String(), 0
	}
	defer waitNoProcesses(t, mark, 10*time.Second)

	// The app's Validate speaks through svc.KeyErrorf: the error names
	// where the bad value came from (here --set) and its key, and it is
	// bad input (exit 2).
	_, stderr, code := run("plan", "--set", "app.items=0", "orders.toml")
	if want := regexp.MustCompile(`--set app\.items=0: app\.items: must be between 1 and 1000, got 0`); code != 2 || !want.MatchString(stderr) {
		t.Errorf("plan with app.items=0: exit %d, stderr %q; want exit 2 and %s", code, stderr, want)
	}

	venv := analysisVenv()
	args := []string{"run", "--results", filepath.Join(mod, "results"), "--set", "load.warmup=500ms", "--set", "load.duration=3s"}
	if venv == "" {
		args = append(args, "--no-report")
	}
	stdout, stderr, code := run(append(args, "orders.toml")...)
	if code != 0 {
		t.Fatalf("orderslab %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, lastLines(stderr, 30))
	}
	m := regexp.MustCompile(`(?m)^results: (.+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no 'results:' line in stdout:\n%s", stdout)
	}
	dir := strings.TrimSpace(m[1])
	checkRunsOK(t, dir)
	if venv == "" {
		t.Skip("both placements ran; svclab-analysis not found ($SVCLAB_VENV or ../../.venv) for the report: run 'make venv'")
	}

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatalf("report.md: %v", err)
	}
	// The answer itself may be left open: a run the load generator
	// flagged as its own bottleneck (on a busy machine) is left out of
	// answers. The CPU table counts every ok run.
	if !strings.Contains(string(md), "what splitting costs") {
		t.Errorf("report.md does not name the spec's question:\n%s", md)
	}
	cpu := hostCPU(t, string(md))
	// Measured on the reference machine (2026-11-29): 0.17–0.24 ms of CPU
	// a request in the monolith, 0.57–0.75 ms split (2.3–4.2x, the higher
	// beside three busy loops). 1.5 leaves room for a loaded machine and
	// /proc's 10 ms ticks. CI once saw 0.47 against 0.60, when the window's
	// CPU was read from the sample before the warm-up's end to one past
	// the measurement's end (window_cpu_seconds now reads both edges).
	if cpu["monolith"] <= 0 || cpu["split"] < 1.5*cpu["monolith"] {
		t.Errorf("the hosts' CPU per request (ms) %v: want split at least 1.5 times the monolith's, whose calls are inproc", cpu)
	}
}

// hostCPU reads the report's "CPU per request, by role" table: the hosts'
// CPU ms per request by placement.
func hostCPU(t *testing.T, md string) map[string]float64 {
	t.Helper()
	_, table, ok := strings.Cut(md, "CPU per request, by role (ms)")
	if !ok {
		t.Fatalf("report.md has no CPU per request table:\n%s", md)
	}
	cpu := map[string]float64{}
	col := -1
	for _, l := range strings.Split(strings.TrimSpace(table), "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case col < 0:
			col = slices.Index(cells, "hosts")
		case strings.HasPrefix(cells[0], "---"):
		case col < len(cells):
			v, err := strconv.ParseFloat(cells[col], 64)
			if err != nil {
				t.Fatalf("CPU per request of %s: %q: %v", cells[0], cells[col], err)
			}
			cpu[cells[0]] = v
		}
	}
	if col < 0 || len(cpu) != 2 {
		t.Fatalf("want the hosts' CPU of monolith and split in the table, got %v from:\n%s", cpu, table)
	}
	return cpu
}

// copyModule copies the module in src to a temp dir outside this
// repository, with its replace of svclab pointing at checkout, and returns
// the copy. It first checks that the module requires no version that this
// repository's go.mod does not, so it builds from the same module cache.
func copyModule(t *testing.T, src, checkout string) string {
	t.Helper()
	main := readModFile(t, filepath.Join(checkout, "go.mod"))
	own := map[string]string{}
	for _, r := range main.Require {
		own[r.Mod.Path] = r.Mod.Version
	}
	ex := readModFile(t, filepath.Join(src, "go.mod"))
	for _, r := range ex.Require {
		if r.Mod.Path != main.Module.Mod.Path && own[r.Mod.Path] != r.Mod.Version {
			t.Errorf("%s requires %s %s; svclab's go.mod has %q: run go mod tidy there", src, r.Mod.Path, r.Mod.Version, own[r.Mod.Path])
		}
	}
	if err := ex.AddReplace(main.Module.Mod.Path, "", checkout, ""); err != nil {
		t.Fatal(err)
	}
	gomod, err := ex.Format()
	if err != nil {
		t.Fatal(err)
	}

	dst := t.TempDir()
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == "results" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "go.mod" {
			b = gomod
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

func readModFile(t *testing.T, path string) *modfile.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
