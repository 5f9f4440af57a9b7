package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy/procstat"
)

// TestPlanningStopsOnSignal: a design of a million runs, allowed by a
// raised cap, takes minutes to check point by point; Ctrl-C and SIGTERM
// stop `plan`, and the planning step of `run`, within moments.
func TestPlanningStopsOnSignal(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[app]\nname = \"chain\"\n[load]\nrate = 100\nduration = \"1s\"\n[experiment]\nmax_runs = 1000000\n[experiment.factors]\n")
	for _, key := range []string{"load.rate", "load.max_inflight", "load.connections"} {
		fmt.Fprintf(&b, "%q = [", key)
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&b, "%d, ", i)
		}
		b.WriteString("]\n")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		sig  syscall.Signal
		want string
	}{
		{"plan, Ctrl-C", []string{"plan", "--brief", path}, syscall.SIGINT, "interrupt signal received"},
		{"plan, SIGTERM", []string{"plan", "--brief", path}, syscall.SIGTERM, "terminated signal received"},
		{"run, Ctrl-C", []string{"run", "--no-report", "--results", dir, path}, syscall.SIGINT, "interrupt signal received"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(svclabBin, tc.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Planning has begun once the process has used more CPU than
			// starting takes (tens of ms); a fixed sleep signalled a
			// process still starting on a busy machine, which the runtime's
			// default handler then killed.
			for end := time.Now().Add(10 * time.Second); processCPU(cmd.Process.Pid) < 300*time.Millisecond && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still planning 10s after %v; stderr: %s", tc.sig, stderr.String())
			}
			if took := time.Since(sent); took > 3*time.Second {
				t.Errorf("stopped %v after %v, want within moments", took, tc.sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "planning stopped") || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and planning stopped by %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// processCPU is the CPU time pid has used, or 0 once it is gone.
func processCPU(pid int) time.Duration {
	r, err := procstat.Open()
	if err != nil {
		return 0
	}
	u, err := r.Process(pid).Sample(context.Background())
	if err != nil {
		return 0
	}
	return time.Duration(u.CPUSeconds * float64(time.Second))
}

// TestPlanLinkedFactorAndQuestions: svclab plan prints a linked factor's
// levels as the analysis names them, the keys it sets, the questions, and
// a sequential experiment's blocks and budget; a wrong question is an
// error at its key before anything is planned.
func TestPlanLinkedFactorAndQuestions(t *testing.T) {
	t.Parallel()
	spec := filepath.Join("..", "..", "experiments", "mesh-by-transport.toml")
	stdout, stderr, code := svclab(t, context.Background(), nil, "plan", "--seed", "7", spec)
	if code != 0 {
		t.Fatalf("plan exited %d: %s", code, stderr)
	}
	for _, want := range []string{
		"4 design points, run in blocks until every question is decided: at most 30 blocks = 120 runs (max_runs 120, budget 45m0s)",
		"B  mesh                         {{mtls=false, tracing=0}, {mtls=true, tracing=1}}",
		"sets deploy.mtls, deploy.tracing",
		"mesh cost by transport: mesh by deploy.transport, on p50_ms, margin 1.1×",
		"4      http  mtls=true, tracing=1",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout)
		}
	}
	src, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.NewReplacer(`effect = "mesh"`, `effect = "mseh"`, `"deploy.tracing" = 1.0 }`, `"deploy.tracing" = 2.0 }`).Replace(string(src))
	path := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = svclab(t, context.Background(), nil, "plan", path)
	if code != 2 || !strings.Contains(stderr, `experiment.questions[0].effect: "mseh" is not a factor of this experiment; the factors are "deploy.transport", "mesh"`) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestPlanWarnsOfFewBlocks: svclab plan warns, on stderr and whatever the
// output's form, when a sequential experiment's budget holds fewer blocks
// than its questions need for a finite interval, and says how far to
// raise it; the experiment's own budget draws no warning.
func TestPlanWarnsOfFewBlocks(t *testing.T) {
	t.Parallel()
	spec := filepath.Join("..", "..", "experiments", "mesh-by-transport.toml")
	const warning = `warning: question "mesh cost by transport" cannot be decided within the budget: its confidence sequences need 5 usable blocks for a finite interval (its 2 ratios at 97.5% each), but experiment.max_runs = 12 holds 3 blocks of 4 runs`
	for _, args := range [][]string{
		{"plan", "--brief", "--set", "experiment.max_runs=12", spec},
		{"plan", "--json", "--set", "experiment.max_runs=12", spec},
	} {
		stdout, stderr, code := svclab(t, context.Background(), nil, args...)
		if code != 0 || !strings.Contains(stderr, warning) || !strings.Contains(stderr, "raise experiment.max_runs to 20") {
			t.Errorf("%q: exit %d, stderr:\n%s", args, code, stderr)
		}
		if strings.Contains(stdout, "warning") {
			t.Errorf("%q: the warning is in the plan itself:\n%s", args, stdout)
		}
	}
	_, stderr, code := svclab(t, context.Background(), nil, "plan", "--brief", spec)
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("the experiment's own budget: exit %d, stderr:\n%s", code, stderr)
	}
}
