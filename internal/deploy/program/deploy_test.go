package program

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/procgroup"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// need skips the test when a program it runs is not installed.
func need(t *testing.T, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed", p)
			}
		}
	}
}

// resolved loads and resolves the spec at path.
func resolved(t *testing.T, path string) (*spec.Spec, *runtime.Topology) {
	t.Helper()
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, topo
}

// topology resolves the spec at path, and checks the machine.
func topology(t *testing.T, path string) *runtime.Topology {
	t.Helper()
	s, topo := resolved(t, path)
	if err := CheckMachine(s, topo); err != nil {
		t.Fatal(err)
	}
	return topo
}

// specFile writes src as a spec in a temp dir.
func specFile(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeSpec writes src as a spec in a temp dir and resolves it.
func writeSpec(t *testing.T, src string) *runtime.Topology {
	t.Helper()
	return topology(t, specFile(t, src))
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func deployOf(t *testing.T, topo *runtime.Topology) (deploy.Deployment, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Deploy(ctx, topo, deploy.Options{Log: testLog{t}})
	if err == nil {
		t.Cleanup(func() { _ = d.Stop(context.Background()) })
	}
	return d, err
}

// groupGone reports whether no process is left in the process group pid
// led.
func groupGone(pid int) bool {
	return errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
}

func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !groupGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process group %d still has processes", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestSystem deploys three programs in two languages, a Python frontend
// that calls a real Redis and a real nginx serving a static file, and
// calls the frontend: each answer counts a visit in Redis and carries
// the page nginx served. Every program is sampled, and Stop leaves no
// process of any program's group.
func TestSystem(t *testing.T) {
	need(t, "python3", "redis-server", "nginx")
	d, err := deployOf(t, topology(t, "testdata/system/spec.toml"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("testdata/system/static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		resp, err := http.Get(d.GatewayURL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Hits      int `json:"hits"`
			PageBytes int `json:"page_bytes"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || got.Hits != i || got.PageBytes != len(page) {
			t.Fatalf("call %d: %s %+v (%v); want hits %d and the page's %d bytes", i, resp.Status, got, err, i, len(page))
		}
	}
	// `svclab up`'s description: the programs and what they speak, no
	// gateway, placement or transport of svclab's, and a curl of the path
	// the load sends (not the health check's).
	var desc strings.Builder
	deploy.Describe(&desc, d)
	for _, want := range []string{"app exec, programs cart (tcp), frontend (http), static (http), 3 processes\n", "\ntry:\n  curl " + d.GatewayURL() + "/\n"} {
		if !strings.Contains(desc.String(), want) {
			t.Errorf("Describe wrote\n%s\nwant %q in it", desc.String(), want)
		}
	}
	for _, not := range []string{"gateway:", "placement", "transport"} {
		if strings.Contains(desc.String(), not) {
			t.Errorf("Describe wrote\n%s\nwhich names svclab's %s: programs have none", desc.String(), not)
		}
	}
	var pids []int
	for _, p := range d.Processes() {
		u, err := p.Resources().Sample(context.Background())
		if err != nil || u.RSSBytes <= 0 {
			t.Errorf("%s: sample %+v, %v", p.Info(), u, err)
		}
		pids = append(pids, p.Info().PID)
	}
	if len(pids) != 3 {
		t.Fatalf("%d processes, want 3", len(pids))
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids)
}

// failing is a spec of one program web with the given keys.
func failing(keys string) string {
	return "[app]\nname = \"exec\"\nentry = \"web\"\n[app.components.web]\nprotocol = \"http\"\n" + keys
}

// answer500 is a program whose every answer is a 500. It has 3 s to
// answer at all: beside make test's last step, python3 once took over 1 s
// to listen, and the check saw a refused connection, not the 500.
const answer500 = `command = ["python3", "-c", '''
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(500); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
''', "{port}"]
health = "/healthz"
start_timeout = "3s"
`

func TestDeployFails(t *testing.T) {
	need(t, "python3")
	for _, tc := range []struct {
		name, keys string
		want       []string
	}{
		{"exits at once", `command = ["sh", "-c", "echo cannot read my config >&2; exit 3"]`,
			[]string{"component web exited before it was healthy", "exit status 3", "cannot read my config"}},
		{"never healthy", "command = [\"sleep\", \"30\"]\nstart_timeout = \"1s\"",
			[]string{"component web is not healthy after 1s (app.components.web.start_timeout): connect to 127.0.0.1:"}},
		{"health answers 500", answer500,
			[]string{"component web is not healthy after 3s", "GET /healthz: answered 500 Internal Server Error"}},
		{"command not found", `command = ["./no-such-server"]`,
			[]string{`component web: command "./no-such-server":`, "no such file or directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, topo := resolved(t, specFile(t, failing(tc.keys)))
			start := time.Now()
			_, err := deployOf(t, topo)
			if err == nil {
				t.Fatal("Deploy succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("Deploy took %s to fail", took)
			}
		})
	}
}

// TestDiesMidRun: a program that dies while the deployment runs is
// reported on Exited with how it ended; the others go on.
func TestDiesMidRun(t *testing.T) {
	need(t, "python3", "redis-server")
	d, err := deployOf(t, writeSpec(t, `[app]
name = "exec"
entry = "web"
[app.components.web]
command = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "{port}"]
protocol = "http"
calls = ["db"]
[app.components.db]
command = ["redis-server", "--port", "{port}", "--save", ""]
protocol = "tcp"
`))
	if err != nil {
		t.Fatal(err)
	}
	var web, db deploy.Process
	for _, p := range d.Processes() {
		switch p.Info().Name {
		case "web":
			web = p
		case "db":
			db = p
		}
	}
	if err := syscall.Kill(web.Info().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-d.Exited():
		if e := p.Exit(); p.Info().Name != "web" || e.Status != "signal: killed" {
			t.Errorf("exited: %s, %s; want web killed", p.Info(), e.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit reported")
	}
	if groupGone(db.Info().PID) {
		t.Error("db went with web")
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitGone(t, []int{web.Info().PID, db.Info().PID})
}

// TestSweep: a program that ignores SIGTERM, the parent-death signal,
// and whose svclab is gone, is killed by the next sweep with its group.
func TestSweep(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `trap "" TERM; sleep 60 & wait`)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:1", OwnerEnv, dead.Process.Pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The group is killed at cleanup only if the sweep failed to: once
	// reaped, its id may be another test's.
	g := procgroup.New(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Signal(syscall.SIGKILL) })
	waited := make(chan error, 1)
	go func() { waited <- g.Wait() }()
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(removed), fmt.Sprintf("program pid %d ", cmd.Process.Pid)) {
		t.Errorf("Sweep removed %v, not pid %d", removed, cmd.Process.Pid)
	}
	select {
	case err := <-waited:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("the program ended with %v, want killed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the program outlived the sweep")
	}
	waitGone(t, []int{cmd.Process.Pid})
	// Our own programs are not swept.
	mine := exec.Command("sleep", "60")
	mine.Env = append(os.Environ(), OwnerEnv+"="+ownerMark())
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mine.Process.Kill(); _ = mine.Wait() }()
	if removed, _ := Sweep(); strings.Contains(fmt.Sprint(removed), fmt.Sprintf("pid %d ", mine.Process.Pid)) {
		t.Errorf("Sweep killed a program of a live svclab: %v", removed)
	}
}

// TestLimits: [deploy.resources] and the deployment's CPUs put a program,
// and what it forks, in a control group of its own from its first
// instruction, sampled with the group's counters and removed at Stop.
func TestLimits(t *testing.T) {
	need(t, "python3")
	if _, err := cgroup.Open(); err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	topo := writeSpec(t, `[app]
name = "exec"
entry = "web"
[app.components.web]
command = ["sh", "-c", "sleep 300 & exec python3 -m http.server --bind 127.0.0.1 {port}"]
protocol = "http"
[deploy.resources.web]
cpu = 0.5
memory = "256MiB"
`)
	if got := topo.Groups[0].Resources; got.CPU != 0.5 || got.Memory != 256<<20 {
		t.Fatalf("group resources %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Deploy(ctx, topo, deploy.Options{CPUs: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	p := d.Processes()[0]
	if l := p.Info().Limits; l == nil || l.CPU != 0.5 || l.Memory != 256<<20 || l.CPUs != "0" {
		t.Errorf("limits %+v", l)
	}
	u, err := p.Resources().Sample(ctx)
	if err != nil || u.Cgroup == nil {
		t.Errorf("sample %+v, %v: want the cgroup's counters", u, err)
	}
	// The shell's child, forked before the program started, is inside.
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.Info().PID, p.Info().PID))
	want := d.ID() + "-web"
	for _, pid := range append(strings.Fields(string(kids)), fmt.Sprint(p.Info().PID)) {
		b, err := os.ReadFile("/proc/" + pid + "/cgroup")
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("pid %s is not in cgroup %s:\n%s", pid, want, b)
		}
	}
	if len(strings.Fields(string(kids))) == 0 {
		t.Error("the program's sleep is not its child")
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("/proc/self/cgroup"); strings.Contains(string(b), want) {
		t.Error("the test is in the program's group")
	}
}

// answersOwnAddress is a Python HTTP server that answers every GET with
// the address it listens on, argv[1].
const answersOwnAddress = `
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = sys.argv[1].encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1].rsplit(":", 1)[1])), H).serve_forever()
`

// replicaSpec is web, which answers what backend answers it, before
// three replicas of backend, each of which answers its own address; and
// db, two replicas of Redis behind a TCP front.
const replicaSpec = `[app]
name = "exec"
entry = "web"
[app.components.web]
command = ["python3", "-c", '''
import http.server, os, sys, urllib.request
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = urllib.request.urlopen("http://" + os.environ["BACKEND"] + "/").read()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
''', "{port}"]
protocol = "http"
env = { BACKEND = "{addr:backend}" }
[app.components.backend]
command = ["python3", "-c", '''` + answersOwnAddress + `''', "{listen}"]
protocol = "http"
[app.components.db]
command = ["redis-server", "--port", "{port}", "--save", ""]
protocol = "tcp"
[deploy.replicas]
backend = 3
db = 2
`

// TestReplicas: [deploy.replicas] runs a program as several processes,
// each on its own address, and its callers reach them through one front
// that spreads calls over every replica (per request for HTTP, per
// connection for TCP), and stops sending to a replica that died.
func TestReplicas(t *testing.T) {
	need(t, "python3", "redis-server")
	d, err := deployOf(t, writeSpec(t, replicaSpec))
	if err != nil {
		t.Fatal(err)
	}
	own := map[string][]deploy.Process{}
	for _, p := range d.Processes() {
		own[p.Info().Group] = append(own[p.Info().Group], p)
	}
	if len(own["backend"]) != 3 || len(own["db"]) != 2 || len(own["web"]) != 1 {
		t.Fatalf("processes by component: %v", own)
	}
	call := func() string {
		resp, err := http.Get(d.GatewayURL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("web answered %s %s", resp.Status, b)
		}
		return string(b)
	}
	seen := map[string]int{}
	for range 30 {
		seen[call()]++
	}
	for _, p := range own["backend"] {
		if addr := p.Listeners()["backend"].Addr; seen[addr] != 10 {
			t.Errorf("replica %s at %s took %d of 30 calls, want 10 (round robin): %v", p.Info().Name, addr, seen[addr], seen)
		}
	}
	// Redis answers its own port to CONFIG GET port: each new connection
	// through the front meets the next replica.
	dbFront := d.(*deployment).addrs["db"]
	ports := map[string]bool{}
	for range 4 {
		c, err := net.Dial("tcp", dbFront)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONFIG GET port\r\n")
		r := bufio.NewReader(c)
		var lines []string
		for range 5 {
			l, _ := r.ReadString('\n')
			lines = append(lines, strings.TrimSpace(l))
		}
		c.Close()
		ports[lines[4]] = true
	}
	if len(ports) != 2 {
		t.Errorf("connections through the db front met ports %v, want both replicas'", ports)
	}
	// A replica that dies leaves the front; the calls go on over the
	// others.
	dead := own["backend"][0]
	if err := syscall.Kill(dead.Info().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// It is reported, as any process's exit, under the replica's own
	// name (a run's failure names it: experiment.crashText).
	if ex := (<-d.Exited()).Exit(); ex.Process.Name != "backend#0" || ex.Process.Group != "backend" || ex.Status != "signal: killed" {
		t.Errorf("the dead replica's exit is %s of group %s, %q; want backend#0 of group backend, signal: killed", ex.Process.Name, ex.Process.Group, ex.Status)
	}
	clear(seen)
	for range 10 {
		seen[call()]++
	}
	if seen[dead.Listeners()["backend"].Addr] != 0 || len(seen) != 2 {
		t.Errorf("after %s died, calls went to %v", dead.Info().Name, seen)
	}
}

// TestSidecarsMTLS: with deploy.sidecar = "envoy" and deploy.mtls, the
// programs call each other through Envoy proxies over mutual TLS (the
// system answers as without them), and a plaintext client is refused at
// every proxy's inbound listener: Redis's (a raw TCP proxy) and nginx's
// (an HTTP one).
func TestSidecarsMTLS(t *testing.T) {
	need(t, "python3", "redis-server", "nginx")
	k, _ := sidecar.Lookup("envoy")
	if _, err := k.Binary(); err != nil {
		t.Skip(err)
	}
	s, err := spec.Load("testdata/system/spec.toml", `deploy.sidecar="envoy"`, "deploy.mtls=true")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckMachine(s, topo); err != nil {
		t.Fatal(err)
	}
	dep, err := deployOf(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		resp, err := http.Get(dep.GatewayURL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"hits": %d`, i)) {
			t.Fatalf("call %d through the mesh: %s %s", i, resp.Status, b)
		}
	}
	proxies := 0
	for _, p := range dep.Processes() {
		if p.Info().Role == deploy.RoleSidecar {
			proxies++
		}
	}
	// frontend's two (HTTP: its inbound and nginx; TCP: Redis), cart's, static's.
	if proxies != 4 {
		t.Errorf("%d sidecar processes, want 4", proxies)
	}
	d := dep.(*deployment)
	// The frontend reaches Redis through its proxy, not directly.
	if d.peersOf("frontend", 0)["cart"] == d.addrs["cart"] {
		t.Errorf("the frontend calls cart at its own address %s, not through its sidecar", d.addrs["cart"])
	}
	c, err := net.DialTimeout("tcp", d.inboundOf("cart", 0), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "PING\r\n")
	got, _ := io.ReadAll(c)
	c.Close()
	if strings.Contains(string(got), "PONG") {
		t.Errorf("a plaintext client reached Redis through its proxy: %q", got)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	if resp, err := client.Get("http://" + d.inboundOf("static", 0) + "/index.html"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Errorf("a plaintext client got %s %q from nginx's proxy", resp.Status, b)
	}
	// Straight to the programs, as Istio without its redirection, they
	// answer: what refuses is the proxy.
	if c, err := net.Dial("tcp", d.addrs["cart"]); err == nil {
		fmt.Fprintf(c, "PING\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.HasPrefix(line, "+PONG") {
			t.Errorf("Redis itself answered %q", line)
		}
	} else {
		t.Error(err)
	}
}
