package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/experiment"
)

// externalNginx is an nginx the test starts as the system that already
// runs: a master and one worker, not a daemon, with a private prefix
// and a configuration that includes variant.conf, which a setup script
// rewrites before it reloads nginx.
type externalNginx struct {
	dir  string
	port int
	pid  int
}

// startExternalNginx starts nginx in dir on a free loopback port and
// waits until it answers /healthz.
func startExternalNginx(t *testing.T, dir string) *externalNginx {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			t.Skip("nginx is not installed")
		}
		bin = "/usr/sbin/nginx"
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (the setup script polls nginx with it)")
	}
	addrs, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := netip.ParseAddrPort(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	port := int(ap.Port())
	user := ""
	if os.Geteuid() == 0 {
		// Its workers would run as nobody, who cannot read the test's
		// temp dir.
		user = "user root;"
	}
	conf := fmt.Sprintf(`daemon off;
%[3]s
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
worker_processes 1;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path %[1]s/cb;
  proxy_temp_path %[1]s/px;
  fastcgi_temp_path %[1]s/fc;
  uwsgi_temp_path %[1]s/uw;
  scgi_temp_path %[1]s/sc;
  server {
    listen 127.0.0.1:%[2]d;
    location = /healthz { return 200 "ok\n"; }
    include %[1]s/variant.conf;
  }
}
`, dir, port, user)
	// 300 kB, which limit_rate 1m sends in about 0.3 s.
	payload := strings.Repeat("x", 300_000)
	for name, body := range map[string]string{
		"nginx.conf":   conf,
		"variant.conf": "location = /variant { return 200 \"none\"; }\n",
		"payload.txt":  payload,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	n := &externalNginx{dir: dir, port: port, pid: cmd.Process.Pid}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(n.url() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not answer: %v\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *externalNginx) url() string { return "http://127.0.0.1:" + strconv.Itoa(n.port) }

// configureScript is the setup of the tests: it serves /payload at full
// speed ("fast") or at 1 MB/s ("slow"), reloads nginx, and waits until
// the new configuration answers, as reload is asynchronous.
const configureScript = `#!/bin/sh
set -e
cd "$(dirname "$0")"
rate=""
[ "$1" = slow ] && rate="limit_rate 1m;"
printf 'location = /payload { alias %s/payload.txt; %s }\nlocation = /variant { return 200 "%s"; }\n' "$PWD" "$rate" "$1" > variant.conf
kill -HUP "$(cat nginx.pid)"
i=0
while [ "$(curl -s "$2/variant")" != "$1" ]; do
  i=$((i+1)); [ $i -gt 200 ] && { echo "variant $1 did not become active" >&2; exit 1; }
  sleep 0.05
done
echo "variant $1 active"
`

// writeExecutable writes an executable script.
func writeExecutable(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runExternal writes spec as external.toml in dir and runs it with
// results under dir/results.
func runExternal(t *testing.T, dir, spec string) (stdout, stderr string, code int) {
	t.Helper()
	specPath := filepath.Join(dir, "external.toml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return svclab(t, ctx, nil, "run", "--no-report", "--results", filepath.Join(dir, "results"), specPath)
}

// externalRun is one run.json of an external experiment.
type externalRun struct {
	Status, Reason string
	Levels         map[string]any
	dir            string
}

func readExternalRuns(t *testing.T, results string) []externalRun {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(results, "*", "runs", "*", "run.json"))
	var out []externalRun
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r externalRun
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		r.dir = filepath.Dir(p)
		out = append(out, r)
	}
	return out
}

// TestExternalRun: `svclab run` of a design over a user key of
// [deploy.external] against an nginx that the test started: setup
// reconfigures and reloads nginx per design point, the runs measure the
// difference (a payload sent at 1 MB/s takes far longer than at full
// speed), nginx's master is sampled as role external, and teardown runs
// after each point.
func TestExternalRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := startExternalNginx(t, dir)
	writeExecutable(t, filepath.Join(dir, "configure.sh"), configureScript)
	spec := fmt.Sprintf(`[deploy]
deployer = "external"

[deploy.external]
url = %[1]q
setup = ["./configure.sh", "{deploy.external.variant}", "{deploy.external.url}"]
teardown = ["sh", "-c", "echo {deploy.external.variant} >> teardowns"]
ready = "/healthz"
variant = "fast"
processes = [%[2]d]

[load]
rate = 20
warmup = "1s"
duration = "3s"
[load.request]
path = "/payload"
expect_status = 200

[experiment]
seed = 1
[experiment.factors]
"deploy.external.variant" = ["fast", "slow"]
`, n.url(), n.pid)
	results := filepath.Join(dir, "results")
	stdout, stderr, code := runExternal(t, dir, spec)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The system was started by the test, not by svclab: the generator
	// cannot be given CPUs apart from it, and the run must not say so.
	if !strings.Contains(stderr, "share every CPU: the external deployer starts no process") || strings.Contains(stderr, "the system under test on CPU") {
		t.Errorf("the isolation line claims CPUs for a system svclab did not start:\n%s", stderr)
	}
	p50 := map[string]float64{}
	for _, r := range readExternalRuns(t, results) {
		if r.Status != "ok" {
			t.Fatalf("run %v: %s: %s", r.Levels, r.Status, r.Reason)
		}
		variant, _ := r.Levels["deploy.external.variant"].(string)
		sum := readSummary(t, r.dir)
		tot := sum.Operations[0]
		if tot.Count < 40 || tot.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors; want about 60 without errors", variant, tot.Count, tot.Errors)
		}
		p50[variant] = tot.Latency.P50Ms
		rows, err := parquet.ReadFile[experiment.ResourceRow](filepath.Join(r.dir, "resources.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		sampled := 0
		for _, row := range rows {
			if row.Role == "external" && row.PID == int64(n.pid) && row.RSSBytes > 0 {
				sampled++
			}
		}
		if sampled < 2 {
			t.Errorf("%s: %d samples of nginx's master (pid %d) with role external in resources.parquet, want one a second", variant, sampled, n.pid)
		}
	}
	t.Logf("latency p50 by variant: %v ms", p50)
	// 300 kB at 1 MB/s is about 300 ms; at full speed on loopback, a
	// millisecond or so.
	if len(p50) != 2 || p50["slow"] < 150 || p50["fast"] > 50 || p50["slow"] < 5*p50["fast"] {
		t.Errorf("latency p50 by variant %v ms: want slow (limit_rate 1m) about 300 ms and far above fast", p50)
	}
	b, err := os.ReadFile(filepath.Join(dir, "teardowns"))
	if got := strings.Fields(string(b)); err != nil || len(got) != 2 {
		t.Errorf("teardown ran %q (%v), want once after each of the two design points", got, err)
	}
}

// TestExternalSetupFails: a setup that exits non-zero fails its run with
// its exit status and the tail of its output, teardown still runs, and
// the experiment goes on to the other design point.
func TestExternalSetupFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := startExternalNginx(t, dir)
	writeExecutable(t, filepath.Join(dir, "setup.sh"), `#!/bin/sh
echo "configuring for $1"
if [ "$1" = broken ]; then echo "no such variant: $1" >&2; exit 3; fi
`)
	spec := fmt.Sprintf(`[deploy]
deployer = "external"
[deploy.external]
url = %q
setup = ["./setup.sh", "{deploy.external.variant}"]
teardown = ["sh", "-c", "echo {deploy.external.variant} >> teardowns"]
variant = "ok"
[load]
rate = 20
duration = "1s"
[load.request]
path = "/healthz"
[experiment.factors]
"deploy.external.variant" = ["ok", "broken"]
`, n.url())
	results := filepath.Join(dir, "results")
	stdout, stderr, code := runExternal(t, dir, spec)
	if code != 0 || !strings.Contains(stderr, "2 runs: 1 ok, 1 failed") {
		t.Fatalf("exit %d, want 0 with one run failed\n%s\n%s", code, stdout, stderr)
	}
	for _, r := range readExternalRuns(t, results) {
		switch r.Levels["deploy.external.variant"] {
		case "ok":
			if r.Status != "ok" {
				t.Errorf("variant ok: %s: %s", r.Status, r.Reason)
			}
		case "broken":
			for _, want := range []string{"setup", "exit status 3", "configuring for broken", "no such variant: broken"} {
				if r.Status != "failed" || !strings.Contains(r.Reason, want) {
					t.Errorf("variant broken: status %s, reason %q lacks %q", r.Status, r.Reason, want)
				}
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "teardowns"))
	if got := strings.Fields(string(b)); len(got) != 2 {
		t.Errorf("teardown ran after %q, want after both design points, the failed setup's too", got)
	}
}

// TestExternalProcessDies: a process named in deploy.external.processes
// that exits mid-run fails the run with which process it was.
func TestExternalProcessDies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := startExternalNginx(t, dir)
	// A command line no other process has: the pattern finds this one.
	doomed := fmt.Sprintf("2.%d", time.Now().UnixNano()%1_000_000)
	writeExecutable(t, filepath.Join(dir, "setup.sh"), `#!/bin/sh
sleep "$1" &
`)
	spec := fmt.Sprintf(`[deploy]
deployer = "external"
[deploy.external]
url = %q
setup = ["./setup.sh", "{deploy.external.lifetime}"]
lifetime = %q
processes = ["sleep %s", %d]
[load]
rate = 20
warmup = "1s"
duration = "6s"
[load.request]
path = "/healthz"
`, n.url(), doomed, doomed, n.pid)
	results := filepath.Join(dir, "results")
	stdout, stderr, _ := runExternal(t, dir, spec)
	runs := readExternalRuns(t, results)
	if len(runs) != 1 {
		t.Fatalf("%d runs\n%s\n%s", len(runs), stdout, stderr)
	}
	r := runs[0]
	for _, want := range []string{"external process sleep " + doomed + "#0", "exited during the run"} {
		if r.Status != "failed" || !strings.Contains(r.Reason, want) {
			t.Errorf("status %s, reason %q lacks %q", r.Status, r.Reason, want)
		}
	}
}

// TestExternalBadInput: mistakes in an external spec are reported before
// anything starts, each at its file, line and key, all of a stage at
// once; exit status 2.
func TestExternalBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeExecutable(t, filepath.Join(dir, "setup.sh"), "#!/bin/sh\n")
	head := "[deploy]\ndeployer = \"external\"\n"
	for _, tc := range []struct {
		name, src string
		args      []string
		want      []string
	}{
		{name: "keys of what svclab starts", src: head + `placement = "split"
sidecar = "envoy"
[deploy.external]
url = "http://127.0.0.1:1"
[deploy.replicas]
web = 2
[deploy.faults.kill]
target = "web"
[app]
name = "chain"
[load]
rate = 10
[load.request]
path = "/"
`, want: []string{
			`x.toml:3: deploy.placement: does not apply to deploy.deployer = "external"`,
			`x.toml:4: deploy.sidecar: does not apply`, "the mesh svclab builds",
			`x.toml:7: deploy.replicas: does not apply`, "{deploy.external.replicas}",
			`x.toml:9: deploy.faults.kill: does not apply`, "acts on the processes and hops svclab starts",
			`x.toml:11: app: does not apply`,
		}},
		{name: "no url, no request", src: head + "[deploy.external]\nready = \"/healthz\"\n", want: []string{
			"x.toml:3: deploy.external: needs url",
			"x.toml:2: deploy.deployer: the external system's requests are not svclab's to know",
		}},
		{name: "remote url", src: head + "[deploy.external]\nurl = \"http://192.0.2.1:8080\"\n[load]\nrate = 10\n[load.request]\npath = \"/\"\n", want: []string{
			"x.toml:4: deploy.external.url: target \"http://192.0.2.1:8080\" is not on this machine", "--allow-remote",
		}},
		{name: "remote url allowed", args: []string{"--allow-remote"}, src: head + "[deploy.external]\nurl = \"http://192.0.2.1:8080\"\n[load]\nrate = 10\n[load.request]\npath = \"/\"\n"},
		{name: "remote url as a factor's level", src: head + "[deploy.external]\nurl = \"http://127.0.0.1:1\"\n[load]\nrate = 10\n[load.request]\npath = \"/\"\n[experiment.factors]\n\"deploy.external.url\" = [\"http://127.0.0.1:1\", \"http://192.0.2.1:80\"]\n", want: []string{
			`x.toml:10: experiment.factors."deploy.external.url": target "http://192.0.2.1:80" is not on this machine`, "--allow-remote",
		}},
		{name: "load target and protocol", src: head + "[deploy.external]\nurl = \"grpc+tcp://127.0.0.1:1\"\n[load]\ntarget = \"http://127.0.0.1:2\"\n[load.request]\nmethod = \"a.B/C\"\n", want: []string{
			"x.toml:6: load.target: the load's target is deploy.external.url",
			"x.toml:4: deploy.external.url: is a grpc server, which [load] drives with load.protocol = \"grpc\"",
		}},
		{name: "bad values", src: head + `[deploy.external]
url = "https://127.0.0.1:1"
setup = "./setup.sh"
processes = [0, ""]
teardwon = ["x"]
setup_timeout = "soon"
[load.request]
path = "/"
`, want: []string{
			`x.toml:4: deploy.external.url: scheme "https"`,
			"x.toml:5: deploy.external.setup: must be a command as a list of strings",
			"x.toml:6: deploy.external.processes: element 1: 0 is no PID",
			"x.toml:6: deploy.external.processes: element 2: an empty pattern",
			`x.toml:7: deploy.external.teardwon: unknown key (did you mean "teardown"?)`,
			"x.toml:8: deploy.external.setup_timeout: must be a positive duration",
		}},
		{name: "templates and commands", src: head + `[deploy.external]
url = "http://127.0.0.1:1"
setup = ["./setup.sh", "{deploy.external.replica}"]
teardown = ["./missing.sh"]
replicas = 2
[load.request]
path = "/"
`, want: []string{
			`x.toml:5: deploy.external.setup: element 2: {deploy.external.replica} names no key of the spec (did you mean "replicas"?)`,
			`x.toml:6: deploy.external.teardown: "./missing.sh": no such file or directory`,
			"x.toml:7: deploy.external.replicas: is none of url, setup, teardown",
		}},
		{name: "a factor's level names no program", src: head + `[deploy.external]
url = "http://127.0.0.1:1"
setup = ["{deploy.external.tool}"]
tool = "./setup.sh"
[load]
rate = 10
[load.request]
path = "/"
[experiment.factors]
"deploy.external.tool" = ["./setup.sh", "./gone.sh"]
`, want: []string{`deploy.external.setup: "./gone.sh": no such file or directory`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			path := filepath.Join(sub, "x.toml")
			if err := os.Link(filepath.Join(dir, "setup.sh"), filepath.Join(sub, "setup.sh")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stdout, stderr, code := svclab(t, ctx, nil, append(append([]string{"plan"}, tc.args...), path)...)
			if len(tc.want) == 0 {
				if code != 0 {
					t.Fatalf("exit %d, want 0\n%s%s", code, stdout, stderr)
				}
				return
			}
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s%s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestExternalGRPC: an external gRPC server (the benchmark server, which
// serves grpc.health.v1) is driven at its grpc+tcp:// url, after its
// health said it serves, and its process is sampled.
func TestExternalGRPC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "benchserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../internal/load/benchserver").CombinedOutput(); err != nil {
		t.Fatalf("build benchserver: %v\n%s", err, out)
	}
	srv := exec.Command(bin, "-grpc")
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := srv.StderrPipe() // it prints its address with println
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	line := make([]byte, 64)
	n, err := out.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSpace(string(line[:n]))
	spec := fmt.Sprintf(`[deploy]
deployer = "external"
[deploy.external]
url = "grpc+tcp://%s"
ready = "grpc"
processes = [%d]
[load]
protocol = "grpc"
rate = 50
duration = "2s"
[load.request]
method = "grpc.health.v1.Health/Check"
`, addr, srv.Process.Pid)
	stdout, stderr, code := runExternal(t, dir, spec)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	runs := readExternalRuns(t, filepath.Join(dir, "results"))
	if len(runs) != 1 || runs[0].Status != "ok" {
		t.Fatalf("runs %+v", runs)
	}
	tot := readSummary(t, runs[0].dir).Operations[0]
	if tot.Count < 80 || tot.Errors != 0 {
		t.Errorf("%d calls, %d errors; want about 100 without errors", tot.Count, tot.Errors)
	}
	rows, err := parquet.ReadFile[experiment.ResourceRow](filepath.Join(runs[0].dir, "resources.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var cpu float64
	for _, r := range rows {
		if r.Role == "external" && r.PID == int64(srv.Process.Pid) {
			cpu = max(cpu, r.CPUS)
		}
	}
	if cpu <= 0 {
		t.Errorf("the server's CPU was not sampled as role external (%d rows)", len(rows))
	}
}
