package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/experiment"
)

const limitsSpec = `
[app]
name = "chain"
hops = 2

[deploy]
placement = "split"
[deploy.resources.hop1]
cpu = 0.5

[load]
rate = 50
warmup = "300ms"
duration = "4s"

[experiment]
name = "limits"
order = "sequential"
seed = 1
isolation = "cpuset"
[experiment.factors]
"deploy.resources.hop2.memory" = ["48MiB", "2GiB"]
`

// TestRunWithLimitsAndIsolation runs an experiment whose hop2 allocates
// without end: under 48 MiB the OOM killer ends it and the run fails "out
// of memory"; under 2 GiB the run goes on to completion. Both record their
// limits and the disjoint CPU sets of generator and system, the ok run's
// resources.parquet has hop1's throttling, and svclab leaves no cgroup.
func TestRunWithLimitsAndIsolation(t *testing.T) {
	t.Parallel()
	if _, err := cgroup.Detect(); err != nil {
		t.Skipf("needs writable cgroups: %v", err)
	}
	if cpus, _ := cgroup.Allowed(); len(cpus) < 2 {
		t.Skip("isolation needs two CPUs")
	}
	dir := t.TempDir()
	specPath := filepath.Join(dir, "limits.toml")
	if err := os.WriteFile(specPath, []byte(limitsSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	mark := marker(t)
	stdout, stderr, code := svclab(t, ctx, []string{mark, hostentry.HogEnv + "=hop2"}, "run", "--no-report", "--results", filepath.Join(dir, "results"), specPath)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "2 runs: 1 ok, 1 failed") {
		t.Errorf("summary line missing:\n%s", stderr)
	}
	exps, _ := filepath.Glob(filepath.Join(dir, "results", "limits-*"))
	if len(exps) != 1 {
		t.Fatalf("results: %v", exps)
	}
	var ef experiment.ExperimentFile
	readJSONFile(t, filepath.Join(exps[0], "experiment.json"), &ef)
	iso := ef.Isolation
	if iso == nil || iso.Mode != "cpuset" || iso.LoadgenCores < 1 || iso.SUTCores < 1 || iso.LoadgenCPUs == iso.SUTCPUs {
		t.Fatalf("experiment.json isolation = %+v, want disjoint cpusets", iso)
	}
	runs, _ := filepath.Glob(filepath.Join(exps[0], "runs", "*", "run.json"))
	if len(runs) != 2 {
		t.Fatalf("%d run.json files", len(runs))
	}
	svclabPID := 0
	for _, p := range runs {
		var rf experiment.RunFile
		readJSONFile(t, p, &rf)
		mem := rf.Levels["deploy.resources.hop2.memory"]
		switch {
		case mem == "48MiB" && (rf.Status != "failed" || !strings.HasPrefix(rf.Reason, "out of memory")):
			t.Errorf("%s: 48MiB: status %q reason %q, want failed, out of memory", p, rf.Status, rf.Reason)
		case mem == "2GiB" && rf.Status != "ok":
			t.Errorf("%s: 2GiB: status %q reason %q", p, rf.Status, rf.Reason)
		}
		for _, proc := range rf.Processes {
			if proc.Name == "loadgen" {
				svclabPID = proc.PID
			}
			l := proc.Limits
			want := iso.SUTCPUs
			if proc.Name == "loadgen" {
				want = iso.LoadgenCPUs
			}
			if l == nil || l.CPUs != want {
				t.Errorf("%s: process %s limits %+v, want cpus %s", p, proc.Name, l, want)
				continue
			}
			if proc.Name == "hop1" && l.CPU != 0.5 {
				t.Errorf("%s: hop1 cpu limit %v", p, l.CPU)
			}
			if proc.Name == "hop2" && strconv.FormatInt(l.Memory>>20, 10)+"MiB" != mem && strconv.FormatInt(l.Memory>>30, 10)+"GiB" != mem {
				t.Errorf("%s: hop2 memory limit %d, level %v", p, l.Memory, mem)
			}
		}
		if rf.Status != "ok" {
			continue
		}
		rows, err := parquet.ReadFile[experiment.ResourceRow](filepath.Join(filepath.Dir(p), "resources.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		seen := false
		for _, r := range rows {
			switch r.Process {
			case "hop1":
				seen = seen || (r.CFSPeriods != nil && r.ThrottledS != nil && r.CgroupMemBytes != nil && *r.CgroupMemBytes > 0)
			case "loadgen":
				if r.CFSPeriods != nil {
					t.Errorf("loadgen row with cgroup counters: %+v", r)
				}
			}
		}
		if !seen {
			t.Errorf("%s: resources.parquet has no cgroup counters for hop1", p)
		}
	}
	waitNoProcesses(t, mark, 5*time.Second)
	// svclab (the loadgen process) removed its groups when it ended.
	if svclabPID == 0 {
		t.Fatal("no loadgen process in run.json")
	}
	left, _ := filepath.Glob(filepath.Join(cgroup.Root, "*", cgroup.Parent, strconv.Itoa(svclabPID)+"-*"))
	left2, _ := filepath.Glob(filepath.Join(cgroup.Root, cgroup.Parent, strconv.Itoa(svclabPID)+"-*"))
	if len(left)+len(left2) > 0 {
		t.Errorf("cgroups of the finished svclab remain: %v", append(left, left2...))
	}
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
