package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/load"
)

// countingServer is a real HTTP server that counts what it answers and
// the most requests it had in hand at once, answering after d.
type countingServer struct {
	*httptest.Server
	served, inflight, peak atomic.Int64
}

func newCountingServer(t *testing.T, d time.Duration) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inflight.Add(1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		time.Sleep(d)
		s.inflight.Add(-1)
		s.served.Add(1)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(s.Close)
	return s
}

func readSummary(t *testing.T, dir string) load.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s load.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLoadGenerators: N generator processes (2 and 3) together give the
// requested load against a real server, in open and closed loop, and the
// merged result has one generator's shape plus each one's audit.
func TestLoadGenerators(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("open/%d", n), func(t *testing.T) {
			srv := newCountingServer(t, 0)
			const rate, secs = 300.0, 3.0
			dir := t.TempDir()
			mark := marker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			stdout, stderr, code := svclab(t, ctx, []string{mark}, "load", "--generators", strconv.Itoa(n), "--rate", "300",
				"-d", "3s", "--arrival", "constant", "--dir", dir, srv.URL+"/")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			sum := readSummary(t, dir)
			tot := sum.Operations[0]
			want := rate * secs
			if math.Abs(float64(tot.Count)-want) > 0.01*want {
				t.Errorf("%d generators sent %d requests, want %v ± 1%%", n, tot.Count, want)
			}
			if got := srv.served.Load(); math.Abs(float64(got)-want) > 0.01*want {
				t.Errorf("the server answered %d requests, want %v ± 1%%", got, want)
			}
			g := sum.Generator
			if g == nil || len(g.PerGenerator) != n {
				t.Fatalf("summary.json's generator object holds %v per-generator audits, want %d", g, n)
			}
			var sends int64
			for i, a := range g.PerGenerator {
				sends += a.Sends
				// Each sent its share: a third (or half) of the arrivals.
				if share := want / float64(n); math.Abs(float64(a.Sends)-share) > 0.02*share {
					t.Errorf("generator %d sent %d, want its share %v", i, a.Sends, share)
				}
			}
			if sends != g.Sends {
				t.Errorf("merged sends %d, the generators' sum %d", g.Sends, sends)
			}
			if !strings.Contains(stdout, fmt.Sprintf("offered %v/s", rate)) {
				t.Errorf("no open-loop line:\n%s", stdout)
			}
			waitNoProcesses(t, mark, 5*time.Second)
		})
		t.Run(fmt.Sprintf("closed/%d", n), func(t *testing.T) {
			const users, secs = 7, 3.0
			srv := newCountingServer(t, 20*time.Millisecond)
			dir := t.TempDir()
			mark := marker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			stdout, stderr, code := svclab(t, ctx, []string{mark}, "load", "--generators", strconv.Itoa(n), "--users", strconv.Itoa(users),
				"-d", "3s", "--dir", dir, srv.URL+"/")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			tot := readSummary(t, dir).Operations[0]
			// A closed loop's throughput is users / (latency + think time)
			// (Little's law), here with the mean latency the run measured.
			want := users * secs / (tot.Latency.MeanMs / 1e3)
			if math.Abs(float64(tot.Count)-want) > 0.02*want {
				t.Errorf("%d generators of %d users in all made %d requests, want users × duration / mean latency = %.0f ± 2%%", n, users, tot.Count, want)
			}
			// The users were split, not each generator running them all.
			if p := srv.peak.Load(); p != users {
				t.Errorf("the server had at most %d requests at once, want the %d users", p, users)
			}
			waitNoProcesses(t, mark, 5*time.Second)
		})
	}
	t.Run("requests", func(t *testing.T) {
		srv := newCountingServer(t, 0)
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		stdout, stderr, code := svclab(t, ctx, nil, "load", "--generators", "3", "--users", "4", "-n", "200", "-d", "20s", "--dir", dir, srv.URL+"/")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		if got := readSummary(t, dir).Operations[0].Count; got != 200 || srv.served.Load() != 200 {
			t.Errorf("a limit of 200 requests over 3 generators: %d measured, %d served", got, srv.served.Load())
		}
	})
}

// TestLoadGeneratorFails: a generator killed during the run fails it, with
// the generator named and the end of its stderr, and nothing is left
// running.
func TestLoadGeneratorFails(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, 0)
	mark := marker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		// Kill generator 1 of 2 once it has started its load.
		for ctx.Err() == nil {
			for _, pid := range processesWithEnv(mark) {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if strings.Contains(string(cmd), "1/2") && srv.served.Load() > 100 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	stdout, stderr, code := svclab(t, ctx, []string{mark}, "load", "--generators", "2", "--rate", "200", "-d", "10s", srv.URL+"/")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"generator 1/2 failed: signal: killed", "its stderr ends:", "svclab load: generator 1/2: 100 arrivals/s"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	waitNoProcesses(t, mark, 5*time.Second)
}

// TestRunGenerators: svclab run with load.generators = 2 on the local
// deployer gives the requested rate, stores one generator's shape with
// each generator's audit, samples each generator's resources, and a bad
// value is a spec error at its line.
func TestRunGenerators(t *testing.T) {
	t.Parallel()
	const spec = `
[app]
name = "chain"
hops = 2

[deploy]
transport = "grpc"

[load]
rate = 200
warmup = "500ms"
duration = "3s"
generators = GENS

[experiment]
name = "gens"
order = "sequential"
seed = 1
`
	dir := t.TempDir()
	path := filepath.Join(dir, "gens.toml")
	for _, bad := range []struct{ v, msg string }{
		{"0", fmt.Sprintf("gens.toml:13: load.generators: must be between 1 and %d generator processes, got 0", load.MaxGenerators)},
		{"-3", fmt.Sprintf("gens.toml:13: load.generators: must be between 1 and %d generator processes, got -3", load.MaxGenerators)},
		{"1000", fmt.Sprintf("gens.toml:13: load.generators: must be between 1 and %d generator processes, got 1000", load.MaxGenerators)},
	} {
		if err := os.WriteFile(path, []byte(strings.Replace(spec, "GENS", bad.v, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, stderr, code := svclab(t, ctx, nil, "plan", path)
		cancel()
		if code == 0 || !strings.Contains(stderr, bad.msg) {
			t.Errorf("generators = %s: exit %d, stderr %q; want an error %q", bad.v, code, stderr, bad.msg)
		}
	}

	var run string
	timedAttempts(t, func() ([]string, string) {
		m, stderr := runExperimentWith(t, "gens", strings.Replace(spec, "GENS", "2", 1), e2eRun{})
		if len(m) != 1 {
			t.Fatalf("%d runs committed", len(m))
		}
		run = m[0]
		for _, f := range []string{"summary.json", "timeseries.parquet", "latency.hlog", "service_time.hlog", "resources.parquet", "run.json"} {
			if _, err := os.Stat(filepath.Join(run, f)); err != nil {
				t.Errorf("run directory lacks %s", f)
			}
		}
		tot := readSummary(t, run).Operations[0]
		if want := 200 * 3.0; math.Abs(float64(tot.Count)-want) > 0.01*want {
			rj, _ := os.ReadFile(filepath.Join(run, "run.json"))
			var rf experiment.RunFile
			if err := json.Unmarshal(rj, &rf); err != nil {
				t.Fatal(err)
			}
			return []string{fmt.Sprintf("2 generators sent %d requests, want %v ± 1%%\nstderr:\n%s\nrun.json:\n%s", tot.Count, want, stderr, rj)}, hostLate(rf.Warnings)
		}
		return nil, ""
	})
	var rf struct {
		Status    string
		Generator load.Generator
		Processes []struct{ Name, Role string }
	}
	b, _ := os.ReadFile(filepath.Join(run, "run.json"))
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	if rf.Status != "ok" || len(rf.Generator.PerGenerator) != 2 {
		t.Errorf("run.json: status %q, %d per-generator audits; want ok and 2", rf.Status, len(rf.Generator.PerGenerator))
	}
	names := map[string]bool{}
	for _, p := range rf.Processes {
		names[p.Name] = true
	}
	if !names["loadgen#0"] || !names["loadgen#1"] {
		t.Errorf("run.json's processes lack the generators: %+v", rf.Processes)
	}
}

// TestLoadGeneratorsDieWithParent: kill -9 of `svclab load --generators`
// leaves no generator running.
func TestLoadGeneratorsDieWithParent(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, 0)
	mark := marker(t)
	cmd := exec.Command(svclabBin, "load", "-q", "--generators", "3", "--rate", "150", "-d", "30s", srv.URL+"/")
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for srv.served.Load() < 50 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the generators did not start: %d served", srv.served.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Each generator has a sentinel beside it (the audit's control) when
	// one could start; it must die with the rest.
	var generators, sentinels, others int
	for _, pid := range processesWithEnv(mark) {
		args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		switch a := string(args); {
		case strings.Contains(a, "\x00--shard"):
			generators++
		case strings.Contains(a, "\x00--sentinel"):
			sentinels++
		default:
			others++
		}
	}
	if generators != 3 || others != 1 || sentinels > 3 {
		t.Errorf("marked processes: %d generators, %d sentinels, %d others; want svclab, its 3 generators and at most one sentinel each", generators, sentinels, others)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	waitNoProcesses(t, mark, 5*time.Second)
}

// TestRunGeneratorFails: a generator killed during `svclab run` fails
// that run, which is committed with the generator named and the end of
// its stderr, and nothing is left running.
func TestRunGeneratorFails(t *testing.T) {
	t.Parallel()
	const spec = `
[app]
name = "chain"
hops = 2

[load]
rate = 100
duration = "20s"
generators = 2

[experiment]
name = "genfail"
seed = 1
`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mark := marker(t)
	go func() {
		// Kill generator 1 of 2 a second into its load.
		for ctx.Err() == nil {
			for _, pid := range processesWithEnv(mark) {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if strings.Contains(string(cmd), "1/2") {
					time.Sleep(load.StartDelay + time.Second)
					_ = syscall.Kill(pid, syscall.SIGKILL)
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	runs, stderr := runExperimentWith(t, "genfail", spec, e2eRun{mark: mark, any: true})
	if len(runs) != 1 {
		t.Fatalf("%d runs committed\n%s", len(runs), stderr)
	}
	var rf struct{ Status, Reason string }
	b, _ := os.ReadFile(filepath.Join(runs[0], "run.json"))
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	if rf.Status != "failed" || !strings.Contains(rf.Reason, "generator 1/2 failed: signal: killed") || !strings.Contains(rf.Reason, "svclab load: generator 1/2: 50 arrivals/s") {
		t.Errorf("run.json: status %q, reason %q; want failed, naming generator 1/2 with its stderr", rf.Status, rf.Reason)
	}
}
