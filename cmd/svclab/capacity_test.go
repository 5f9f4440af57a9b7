package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sleepBound is a deployment whose capacity is known: one chain hop that
// sleeps 250 ms per request, reached through the HTTP/JSON gateway over 20
// HTTP/1.1 keep-alive connections. HTTP/1.1 answers one request at a time
// per connection, so at most 20 are served at once, as by a server with 20
// workers: capacity = concurrency / service time = 20 / 0.25 s = 80/s.
// Above it the queue grows for the whole step; below it the latency stays
// near 250 ms, well inside the 400 ms SLO the test sets. The long service
// time keeps what a crowded machine adds to it (tens of ms of wake-up
// delay) a small share of it, so the capacity stays near 80/s.
const sleepBound = `
[app]
name = "chain"
hops = 1

[deploy]
transport = "grpc"

[load]
protocol = "http"
connections = 20

[load.request]
method = "POST"
path = "/svclab.chain.Hop/Call"
body = '{"payload":"small","sleepMicros":250000}'
headers = { "Content-Type" = "application/json" }
`

// TestCapacityFindsKnownCapacity is issue 14's acceptance test: the
// search finds the capacity of a sleep-bounded service within 15%.
func TestCapacityFindsKnownCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys and loads a service for about 30 s")
	}
	const (
		concurrency = 20
		serviceS    = 0.250
		want        = concurrency / serviceS
	)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "sleep.toml")
	if err := os.WriteFile(specPath, []byte(sleepBound), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "capacity.json")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	mark := marker(t)
	start := time.Now()
	stdout, stderr, code := svclab(t, ctx, []string{mark}, "capacity", specPath,
		"--slo", "p99_ms=400", "--start", "15", "--step", "2s", "--warmup", "500ms", "--cooldown", "300ms", "-o", out)
	t.Logf("%s in %s\n%s%s", "svclab capacity", time.Since(start).Round(time.Second), stderr, stdout)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	var f struct {
		Rate     float64
		Interval struct {
			Low  float64
			High *float64
		}
		StopReason string `json:"stop_reason"`
		SLOs       map[string]float64
		Plot       string
		Steps      []struct {
			Rate     float64
			Phase    string
			Pass     bool
			CutShort string `json:"cut_short"`
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Rate < want*0.85 || f.Rate > want*1.15 {
		t.Fatalf("capacity %v/s (stop %s), want %v/s within 15%%", f.Rate, f.StopReason, want)
	}
	if f.Interval.Low != f.Rate || (f.Interval.High != nil && *f.Interval.High <= f.Rate) {
		t.Fatalf("interval %+v does not start at the rate %v", f.Interval, f.Rate)
	}
	if f.SLOs["p99_ms"] != 400 {
		t.Fatalf("slos %v, want p99_ms 400", f.SLOs)
	}
	// Doubling past the knee overloads the service by half: that step's
	// queue grows fast enough for the Cutter to end it; and the search
	// went through all its phases.
	cut, phases := 0, map[string]bool{}
	for _, s := range f.Steps {
		if s.CutShort != "" {
			cut++
		}
		phases[s.Phase] = true
	}
	if cut == 0 || !phases["bracket"] || !phases["bisect"] || (f.StopReason == "converged" && !phases["confirm"]) {
		t.Fatalf("%d steps cut short, phases %v: want a cut and every phase", cut, phases)
	}
	// Every step printed a line, and the answer names the rate.
	if n := strings.Count(stderr, "\nstep "); n != len(f.Steps) || len(f.Steps) < 4 {
		t.Fatalf("%d step lines for %d steps", n, len(f.Steps))
	}
	if !strings.Contains(stdout, "capacity: ") {
		t.Fatalf("no answer line on stdout: %q", stdout)
	}
	r, err := os.Open(filepath.Join(dir, f.Plot))
	if err != nil {
		t.Fatalf("plot %q: %v", f.Plot, err)
	}
	defer r.Close()
	if _, err := png.DecodeConfig(r); err != nil {
		t.Fatalf("plot %s: %v", f.Plot, err)
	}
	waitNoProcesses(t, mark, 5*time.Second)
}

// TestCapacityBadInput: flags and settings are checked before anything
// is deployed, each error naming the flag.
func TestCapacityBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	specPath := filepath.Join(dir, "sleep.toml")
	if err := os.WriteFile(specPath, []byte(sleepBound), 0o644); err != nil {
		t.Fatal(err)
	}
	withSLO := filepath.Join(dir, "slo.toml")
	if err := os.WriteFile(withSLO, []byte(sleepBound+"\n[load.thresholds]\np99_ms = -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{specPath}, "--slo: give at least one SLO, e.g. --slo p99_ms=50"},
		{[]string{specPath, "--slo", "p98_ms=50"}, `--slo "p98_ms=50": unknown SLO "p98_ms"; the keys are those of [load.thresholds]: p50_ms, p90_ms`},
		{[]string{specPath, "--slo", "p99_ms=fast"}, `--slo "p99_ms=fast": must be a number, got "fast"`},
		{[]string{specPath, "--slo", "p99_ms"}, `--slo "p99_ms": write KEY=VALUE`},
		{[]string{specPath, "--slo", "error_rate=2"}, "--slo error_rate=2: must be between 0 and 1"},
		{[]string{specPath, "--slo", "p99_ms=-1"}, "--slo p99_ms=-1: must be >= 0"},
		{[]string{specPath, "--slo", "p99_ms=50", "--slo", "p99_ms=60"}, "--slo p99_ms=50 and --slo p99_ms=60: one value per SLO"},
		{[]string{specPath, "--slo", "p99_ms=50", "--start", "-5"}, "--start: must be a rate > 0, got -5"},
		{[]string{specPath, "--slo", "p99_ms=50", "--precision", "2"}, "--precision: must be above 0 and below 1"},
		// A value Settings reads as unset is refused, not taken for the default.
		{[]string{specPath, "--slo", "p99_ms=50", "--precision", "0"}, "--precision: must be above 0 and below 1 (a share of the rate), got 0"},
		{[]string{specPath, "--slo", "p99_ms=50", "--max-steps", "0"}, "--max-steps: must be at least 2, got 0"},
		{[]string{specPath, "--slo", "p99_ms=50", "--confirm", "-1"}, "--confirm: must be >= 0 (0: none), got -1"},
		{[]string{specPath, "--slo", "p99_ms=50", "--retry", "-2"}, "--retry: must be >= 0 (0: none), got -2"},
		{[]string{specPath, "--slo", "p99_ms=50", "--growth", "0"}, "--growth: must be > 1, got 0"},
		{[]string{specPath, "--slo", "p99_ms=50", "--max-rate", "0"}, "--max-rate: must be a rate > 0"},
		{[]string{specPath, "--slo", "p99_ms=nan"}, "--slo p99_ms=nan: must be a finite number, got nan"},
		{[]string{specPath, "--slo", "p99_ms=50", "--slo", "error_rate=inf"}, "--slo error_rate=inf: must be a finite number, got inf"},
		{[]string{specPath, "--slo", "p99_ms=50", "--step", "10ms"}, "--step: must be at least 500ms"},
		{[]string{specPath, "--slo", "p99_ms=50", "--set", "load.target=http://10.9.8.7/"}, `load.target: target "http://10.9.8.7/" is not on this machine (10.9.8.7 is not a loopback address); pass --allow-remote`},
		{[]string{specPath, "--slo", "p99_ms=50", "-o", dir}, "-o " + dir + ": is a directory"},
		// A spec's own error is located in it, and is bad input as a
		// flag's is (exit 2), as in svclab run.
		{[]string{withSLO}, "slo.toml:20: load.thresholds.p99_ms: must be >= 0, got -3"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		stdout, stderr, code := svclab(t, ctx, nil, append([]string{"capacity"}, tc.args...)...)
		cancel()
		if want := 2; code != want {
			t.Errorf("capacity %q: exit %d, want %d\n%s%s", tc.args, code, want, stdout, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("capacity %q: stderr %q, want %q", tc.args, stderr, tc.want)
		}
		if strings.Contains(stderr, "step ") {
			t.Errorf("capacity %q ran steps before refusing its input:\n%s", tc.args, stderr)
		}
	}
}

// TestCapacityEndsCleanly: a search whose deployment loses a process, or
// that is interrupted, keeps the steps it ran in -o's file, says why it
// ended, and leaves no process behind.
func TestCapacityEndsCleanly(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("deploys a service")
	}
	for _, tc := range []struct {
		name string
		// stop ends the search: main is svclab capacity, hosts the
		// processes it deployed.
		stop func(main *os.Process, hosts []int) error
		want string
	}{
		{"a host is killed", func(_ *os.Process, hosts []int) error { return syscall.Kill(hosts[0], syscall.SIGKILL) }, "exited during the search"},
		{"interrupted", func(main *os.Process, _ []int) error { return main.Signal(os.Interrupt) }, "capacity search interrupted after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			specPath := filepath.Join(dir, "sleep.toml")
			if err := os.WriteFile(specPath, []byte(sleepBound), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "capacity.json")
			mark := marker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, svclabBin, "capacity", specPath, "--slo", "p99_ms=1000", "--start", "15",
				"--step", "2s", "--warmup", "200ms", "--cooldown", "200ms", "-o", out)
			cmd.Env = append(os.Environ(), mark)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for the first step to end, then stop the search in the
			// second.
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(stderr.String(), "step  1 ") {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("no step ended in 30 s:\n%s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond)
			var hosts []int
			for end := time.Now().Add(3 * time.Second); len(hosts) == 0 && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				for _, pid := range processesWithEnv(mark) {
					if pid != cmd.Process.Pid {
						hosts = append(hosts, pid)
					}
				}
			}
			if len(hosts) == 0 {
				_ = cmd.Process.Kill()
				t.Fatalf("no host process found; the search:\n%s", stderr.String())
			}
			if err := tc.stop(cmd.Process, hosts); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want status 1\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr does not say %q:\n%s", tc.want, stderr.String())
			}
			var f struct {
				StopReason string `json:"stop_reason"`
				StopDetail string `json:"stop_detail"`
				Steps      []struct{ Rate float64 }
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("the steps run were not kept: %v", err)
			}
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			if f.StopReason != "error" || len(f.Steps) < 1 || f.Steps[0].Rate != 15 {
				t.Fatalf("file %s: want stop_reason error and the first step at 15/s", b)
			}
			waitNoProcesses(t, mark, 5*time.Second)
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
