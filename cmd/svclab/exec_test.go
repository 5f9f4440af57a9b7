package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/experiment"
)

// execSystem is the exec app's test system: a Python frontend calling a
// real Redis and a real nginx serving a static page.
var execSystem = filepath.Join("..", "..", "internal", "deploy", "program", "testdata", "system", "spec.toml")

func needPrograms(t *testing.T, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed", p)
			}
		}
	}
}

// TestExecUpKill9: `svclab up` of three programs answers through its
// entry, and a kill -9 of svclab leaves no process of the system: not
// the programs, nor what they forked (nginx's worker, which clears its
// environment, so its process group is checked too).
func TestExecUpKill9(t *testing.T) {
	t.Parallel()
	needPrograms(t, "python3", "redis-server", "nginx")
	mark := marker(t)
	cmd := exec.Command(svclabBin, "up", execSystem)
	cmd.Env = append(os.Environ(), mark)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var pgids []int
	entry := ""
	row := regexp.MustCompile(`^\s+(frontend|cart|static)\s+(\d+)\s`)
	timeout := time.After(time.Minute)
read:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("up ended before it was ready:\n%s", stderr.String())
			}
			if m := row.FindStringSubmatch(l); m != nil {
				pid, _ := strconv.Atoi(m[2])
				pgids = append(pgids, pid)
			}
			if after, ok := strings.CutPrefix(l, "entry:   http+tcp://"); ok {
				entry = strings.Fields(after)[0]
			}
			if strings.HasPrefix(l, "Ctrl-C") {
				break read
			}
		case <-timeout:
			t.Fatalf("up not ready within a minute:\n%s", stderr.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	if len(pgids) != 3 || entry == "" {
		t.Fatalf("up listed processes %v and entry %q; want 3 and the frontend's address", pgids, entry)
	}
	resp, err := http.Get("http://" + entry + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"hits": 1`) {
		t.Fatalf("entry answered %s %s", resp.Status, body)
	}
	if len(processesWithEnv(mark)) < 3 {
		t.Fatalf("the marked processes %v do not include the programs", processesWithEnv(mark))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoProcesses(t, mark, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for _, g := range pgids {
		for !errors.Is(syscall.Kill(-g, 0), syscall.ESRCH) {
			if time.Now().After(deadline) {
				t.Fatalf("process group %d still has processes after svclab was killed", g)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestExecRun: `svclab run` of a 2-factor design over the three
// programs (the load's rate, and how many pages the frontend fetches
// from nginx per call, an env key of its own) commits every run with
// each program's resources sampled, and writes the report.
func TestExecRun(t *testing.T) {
	t.Parallel()
	needPrograms(t, "python3", "redis-server", "nginx")
	venv := analysisVenv()
	mark := marker(t)
	env := []string{mark}
	args := []string{"run", "--results", t.TempDir(),
		"--set", `experiment.factors."load.rate"=[20,40]`,
		"--set", `experiment.factors."app.components.frontend.env.PAGES"=["1","4"]`,
		"--set", "load.warmup=500ms", "--set", "load.duration=2s"}
	if venv != "" {
		env = append(env, "SVCLAB_VENV="+venv)
		args = append(args, "--report")
	} else {
		t.Log("svclab-analysis not found ($SVCLAB_VENV or ../../.venv): the runs are checked, the report is not")
		args = append(args, "--no-report")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	defer waitNoProcesses(t, mark, 10*time.Second)
	stdout, stderr, code := svclab(t, ctx, env, append(args, execSystem)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, lastLines(stderr, 30))
	}
	dir := resultsDir(t, stdout)
	checkRunsOK(t, dir)
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4", len(runs))
	}
	for _, r := range runs {
		sum := readSummary(t, r)
		if tot := sum.Operations[0]; tot.Count < 30 || tot.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors", r, tot.Count, tot.Errors)
		}
		rows, err := parquet.ReadFile[experiment.ResourceRow](filepath.Join(r, "resources.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, row := range rows {
			if row.RSSBytes > 0 {
				seen[row.Process] = true
			} else if row.Role == deploy.RoleHost {
				// The last sample, as the measurement ends, is taken before
				// the deployment stops: a process read as it exits has
				// no memory left.
				t.Errorf("%s: %s sampled at t_s %.3f with no memory, as it exited", r, row.Process, row.TS)
			}
		}
		for _, p := range []string{"frontend", "cart", "static"} {
			if !seen[p] {
				t.Errorf("%s: no resource sample of %s (saw %v)", r, p, seen)
			}
		}
	}
	if venv == "" {
		return
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"load.rate", "app.components.frontend.env.PAGES"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md does not name factor %s", want)
		}
	}
}

// TestExecRunProgramDies: a program that dies mid-run fails the run with
// which program it was, how it ended and its last output.
func TestExecRunProgramDies(t *testing.T) {
	t.Parallel()
	needPrograms(t, "python3", "redis-server")
	mark := marker(t)
	spec := writeFile(t, "dies.toml", `[app]
name = "exec"
entry = "web"
[app.components.web]
command = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "{port}"]
protocol = "http"
calls = ["db"]
[app.components.db]
command = ["sh", "-c", "redis-server --port {port} --save '' & sleep 3; echo giving up >&2; exit 7"]
protocol = "tcp"
[load]
rate = 20
warmup = "500ms"
duration = "5s"
[load.request]
path = "/"
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer waitNoProcesses(t, mark, 10*time.Second)
	results := t.TempDir()
	stdout, stderr, _ := svclab(t, ctx, []string{mark}, "run", "--no-report", "--results", results, spec)
	runs := readExternalRuns(t, results)
	if len(runs) != 1 {
		t.Fatalf("%d runs\n%s\n%s", len(runs), stdout, lastLines(stderr, 20))
	}
	for _, want := range []string{"group db (components db) exited during", "exit status 7"} {
		if runs[0].Status != "failed" || !strings.Contains(runs[0].Reason, want) {
			t.Errorf("run %s, reason %q lacks %q", runs[0].Status, runs[0].Reason, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(runs[0].dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		StderrTail map[string]string `json:"stderr_tail"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(run.StderrTail["db"], "giving up") {
		t.Errorf("run.json's stderr_tail of db is %q, want its last words", run.StderrTail["db"])
	}
}
