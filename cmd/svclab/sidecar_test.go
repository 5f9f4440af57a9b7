package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/experiment"
)

const sidecarCrashSpec = `
[app]
name = "chain"
hops = 2

[deploy]
transport = "grpc"
placement = "split"

[load]
rate = 50
warmup = "300ms"
duration = "3s"

[experiment]
name = "sidecar-crash"
order = "interleaved"
repetitions = 2
seed = 1
[experiment.factors]
"deploy.sidecar" = ["none", "haproxy"]
`

// TestRunSidecarDiesMidRun kills the first HAProxy sidecar it sees during
// a run: that run fails, naming the proxy, and the others (the same
// variant's next repetition included) go on; their resources name the
// proxies' role apart.
func TestRunSidecarDiesMidRun(t *testing.T) {
	t.Parallel()
	k, _ := sidecar.Lookup("haproxy")
	if _, err := k.Binary(); err != nil {
		t.Skipf("haproxy: %v", err)
	}
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.toml")
	if err := os.WriteFile(specPath, []byte(sidecarCrashSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	mark := marker(t)

	killed := make(chan int, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			for _, pid := range processesWithEnv(mark) {
				comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
				if strings.TrimSpace(string(comm)) == "haproxy" {
					time.Sleep(1500 * time.Millisecond) // into the measurement
					_ = syscall.Kill(pid, syscall.SIGKILL)
					killed <- pid
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	stdout, stderr, code := svclab(t, ctx, []string{mark}, "run", "--no-report", "--results", filepath.Join(dir, "results"), specPath)
	cancel()
	wg.Wait()
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	select {
	case <-killed:
	default:
		t.Fatal("no haproxy process was seen to kill")
	}
	if !strings.Contains(stderr, "4 runs: 3 ok, 1 failed") {
		t.Errorf("summary line missing:\n%s", stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", "sidecar-crash-*", "runs", "*"))
	if len(runs) != 4 {
		t.Fatalf("%d runs", len(runs))
	}
	sawProxyCPU := false
	for _, run := range runs {
		var rf struct {
			Status, Reason string
			Levels         map[string]any
		}
		b, _ := os.ReadFile(filepath.Join(run, "run.json"))
		if err := json.Unmarshal(b, &rf); err != nil {
			t.Fatal(err)
		}
		sc := rf.Levels["deploy.sidecar"]
		if rf.Status == "failed" {
			if sc != "haproxy" || !strings.Contains(rf.Reason, "sidecar hop") || !strings.Contains(rf.Reason, ".haproxy") || !strings.Contains(rf.Reason, "exited during the run: signal: killed") {
				t.Errorf("%s failed with %q (sidecar %v), want the killed haproxy named", filepath.Base(run), rf.Reason, sc)
			}
			continue
		}
		rows, err := parquet.ReadFile[experiment.ResourceRow](filepath.Join(run, "resources.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]int{}
		for _, r := range rows {
			roles[r.Role]++
			if r.Role == "sidecar" && r.TS > 1 && r.CPUS > 0 {
				sawProxyCPU = true
			}
		}
		if roles["host"] == 0 || roles["loadgen"] == 0 || (sc == "haproxy") != (roles["sidecar"] > 0) {
			t.Errorf("%s (sidecar %v): resource rows by role %v", filepath.Base(run), sc, roles)
		}
	}
	if !sawProxyCPU {
		t.Error("no sidecar used any CPU during a measurement")
	}
	waitNoProcesses(t, mark, 5*time.Second)
}
