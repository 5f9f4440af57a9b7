package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/tempdir"
)

// nginxOrphanSpec is a run with nginx proxies that lasts long enough to be
// killed during its measurement; the first %s is the rest of [deploy], the
// second experiment.isolation.
const nginxOrphanSpec = `
[app]
name = "chain"
hops = 2
[deploy]
transport = "grpc"
placement = "split"
sidecar = "nginx"
%s
[load]
rate = 50
warmup = "200ms"
duration = "60s"
[experiment]
name = "ngx"
order = "sequential"
seed = 1
isolation = %q
`

// nginxOrphanCases are the ways a proxy sits on the machine: a sidecar or
// a node proxy in no cgroup (isolation "none", no limits), which nothing
// but its own parent-death signal or the temp dir's sweep can end; a
// sidecar in its host's cgroup (with limits, or under isolation, which
// needs root), which the stale cgroup sweep ends as well.
var nginxOrphanCases = []struct{ name, deploy, isolation string }{
	{"sidecar", `proxy_mode = "sidecar"`, "none"},
	{"node", `proxy_mode = "node"`, "none"},
	{"sidecar-limits", "proxy_mode = \"sidecar\"\n[deploy.resources.hop1]\ncpu = 1.0\nmemory = \"256MiB\"", "none"},
	{"node-isolated", `proxy_mode = "node"`, "cpuset"},
}

// nginxProc is a process of nginx started under a test's $TMPDIR.
type nginxProc struct {
	pid, ppid int
}

// nginxUnder lists the live nginx processes whose working directory lies
// under tmp: every nginx a svclab with that $TMPDIR started runs in its
// own directory there. nginx workers overwrite their environment with
// their process title, so the marker of processesWithEnv cannot find them.
func nginxUnder(tmp string) []nginxProc {
	procs, _ := procfs.AllProcs()
	var out []nginxProc
	for _, p := range procs {
		cwd, err := p.Cwd()
		if err != nil || !strings.HasPrefix(cwd, tmp+"/") {
			continue
		}
		st, err := p.Stat()
		if err != nil || st.Comm != "nginx" || st.State == "Z" {
			continue
		}
		out = append(out, nginxProc{pid: p.PID, ppid: st.PPID})
	}
	return out
}

// split tells nginx masters (whose parent is no nginx) from workers.
func split(ps []nginxProc) (masters, workers []int) {
	isNginx := map[int]bool{}
	for _, p := range ps {
		isNginx[p.pid] = true
	}
	for _, p := range ps {
		if isNginx[p.ppid] {
			workers = append(workers, p.pid)
		} else {
			masters = append(masters, p.pid)
		}
	}
	return masters, workers
}

// nginxRun is a `svclab run` of nginxOrphanSpec caught in its measurement.
type nginxRun struct {
	tmp, spec, mark string
	cmd             *exec.Cmd
	stderr          *strings.Builder
	killed          time.Time
}

// startNginxRun starts `svclab run` with the given [deploy] lines and its
// own $TMPDIR, and waits until its load runs through nginx masters that
// each have a worker. Whatever nginx of it is left when the test ends is
// killed, so a failure leaves nothing either.
func startNginxRun(t *testing.T, deployLines, isolation string) *nginxRun {
	t.Helper()
	k, _ := sidecar.Lookup("nginx")
	if _, err := k.Binary(); err != nil {
		t.Skipf("nginx: %v", err)
	}
	if _, err := cgroup.Detect(); err != nil && (isolation != "none" || strings.Contains(deployLines, "resources")) {
		t.Skipf("needs cgroups: %v", err)
	}
	dir := t.TempDir()
	r := &nginxRun{tmp: shortTempDir(t), spec: filepath.Join(dir, "ngx.toml"), mark: marker(t), stderr: new(strings.Builder)}
	if err := os.WriteFile(r.spec, []byte(fmt.Sprintf(nginxOrphanSpec, deployLines, isolation)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(svclabBin, "run", "--no-report", "--results", filepath.Join(dir, "results"), r.spec)
	r.cmd.Env = append(os.Environ(), r.mark, "TMPDIR="+r.tmp)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		for _, p := range nginxUnder(r.tmp) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	waitFor(t, 60*time.Second, "a measurement through nginx masters with workers", func() bool {
		load, _ := filepath.Glob(filepath.Join(r.tmp, tempdir.Prefix+"*", "load-*", "latency.hlog"))
		m, w := split(nginxUnder(r.tmp))
		return len(load) == 1 && len(m) > 0 && len(w) >= len(m)
	})
	return r
}

// kill ends svclab with SIGKILL and waits for its hosts (marked) to go.
func (r *nginxRun) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.killed = time.Now()
	_ = r.cmd.Wait()
	waitNoProcesses(t, r.mark, 5*time.Second)
}

// waitNoNginx waits up to d for every nginx of the run to be gone.
func (r *nginxRun) waitNoNginx(t *testing.T, d time.Duration, after string) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		left := nginxUnder(r.tmp)
		if len(left) == 0 {
			t.Logf("no nginx %s, %s after the kill", after, time.Since(r.killed).Round(time.Millisecond))
			return
		}
		if time.Now().After(end) {
			var pids []int
			for _, p := range left {
				pids = append(pids, p.pid)
			}
			t.Fatalf("nginx processes %v still run %s %s", pids, d, after)
		}
	}
}

// TestKilledRunLeavesNoNginx kills `svclab run` with -9 while nginx
// proxies carry its load: no nginx process outlives it, the workers the
// masters forked included, whether or not the proxies sit in a cgroup.
func TestKilledRunLeavesNoNginx(t *testing.T) {
	t.Parallel()
	for _, c := range nginxOrphanCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := startNginxRun(t, c.deploy, c.isolation)
			r.kill(t)
			r.waitNoNginx(t, 5*time.Second, "after svclab was killed")
			if _, stderr, code := svclab(t, context.Background(), []string{"TMPDIR=" + r.tmp}, "clean"); code != 0 {
				t.Fatalf("clean: exit %d\n%s", code, stderr)
			}
			if left, _ := filepath.Glob(filepath.Join(r.tmp, "*")); len(left) != 0 {
				t.Errorf("left in $TMPDIR after clean: %v", left)
			}
		})
	}
}

// TestKilledRunNginxSwept is the fallback of TestKilledRunLeavesNoNginx:
// a master that cannot act on its svclab's death (killed with -9 itself,
// while svclab, stopped, cannot end its process group) leaves its worker
// running, and the next svclab to start, or svclab clean, ends it. (A
// stopped master is no such case: the kernel resumes it, with a SIGHUP,
// once its process group is orphaned.)
func TestKilledRunNginxSwept(t *testing.T) {
	t.Parallel()
	for _, next := range []string{"plan", "clean"} {
		t.Run(next, func(t *testing.T) {
			t.Parallel()
			c := nginxOrphanCases[0]
			r := startNginxRun(t, c.deploy, c.isolation)
			masters, workers := split(nginxUnder(r.tmp))
			if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			for _, pid := range masters {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			r.kill(t)
			time.Sleep(500 * time.Millisecond)
			for _, pid := range workers {
				if err := syscall.Kill(pid, 0); err != nil {
					t.Fatalf("worker %d is gone before any sweep (%v): the test proves nothing", pid, err)
				}
			}
			args := []string{next}
			if next == "plan" {
				args = append(args, r.spec)
			}
			stdout, stderr, code := svclab(t, context.Background(), []string{"TMPDIR=" + r.tmp}, args...)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", next, code, stdout, stderr)
			}
			r.waitNoNginx(t, 2*time.Second, "after svclab "+next)
			if next == "clean" {
				for _, pid := range masters {
					if want := fmt.Sprintf("killed nginx, process group %d", pid); !strings.Contains(stdout, want) {
						t.Errorf("clean said:\n%s\nwant %q", stdout, want)
					}
				}
			}
			if left, _ := filepath.Glob(filepath.Join(r.tmp, "*")); len(left) != 0 {
				t.Errorf("left in $TMPDIR after %s: %v", next, left)
			}
		})
	}
}
