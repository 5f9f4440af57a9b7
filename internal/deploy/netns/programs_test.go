package netns_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/netns"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// needPrograms skips a test whose programs are not installed.
func needPrograms(t *testing.T) {
	t.Helper()
	for _, p := range []string{"python3", "redis-server", "nginx"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed", p)
			}
		}
	}
}

// programSystem is the exec app's test system (internal/deploy/program's
// testdata: a Python frontend that calls a real Redis and a real nginx)
// over two machines: the frontend on vm1, Redis and nginx on vm2. Each
// program listens on its machine's address ({listen}, or every address
// for Redis, which is given {port}). more follows the tables.
func programSystem(t *testing.T, more string) string {
	t.Helper()
	dir, err := filepath.Abs("../program/testdata/system")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`[app]
name = "exec"
entry = "frontend"

[app.components.frontend]
command = ["python3", "frontend.py", "{listen}"]
protocol = "http"
health = "/healthz"
calls = ["cart", "static"]
env = { REDIS_ADDR = "{addr:cart}", STATIC_ADDR = "{addr:static}" }
dir = %[1]q

[app.components.cart]
command = ["redis-server", "--port", "{port}", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
protocol = "tcp"

[app.components.static]
command = ["./nginx.sh", "{listen}"]
protocol = "http"
health = "/healthz"
dir = %[1]q

[deploy]
deployer = "netns"

[deploy.hosts.vm1]
groups = ["frontend"]

[deploy.hosts.vm2]
groups = ["cart", "static"]
%[2]s`, dir, more)
}

// visit is one call of the frontend through the deployment's URL.
type visit struct {
	status int
	body   string
	took   time.Duration
}

func call(t *testing.T, client *http.Client, url string) visit {
	t.Helper()
	start := time.Now()
	resp, err := client.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return visit{resp.StatusCode, string(b), time.Since(start)}
}

// TestProgramsTwoMachines deploys the exec system over two machines, with
// the vm1-vm2 link unshaped and with 10 ms of latency: each program runs
// in its machine's namespace and listens on its machine's address, the
// frontend reaches Redis and nginx across the link (each call makes one
// round trip to each, so the shaped link adds 20 ms to the p50 call), and
// every program is sampled.
func TestProgramsTwoMachines(t *testing.T) {
	needRoot(t)
	needPrograms(t)
	self := ownNS
	p50 := func(link string) time.Duration {
		dep, _ := deployed(t, programSystem(t, link))
		client := &http.Client{Timeout: 10 * time.Second}
		var took []time.Duration
		for i := -5; i < 60; i++ {
			v := call(t, client, dep.GatewayURL())
			var got struct {
				Hits int `json:"hits"`
			}
			if err := json.Unmarshal([]byte(v.body), &got); v.status != 200 || err != nil || got.Hits != i+6 {
				t.Fatalf("call %d: %d %q (%v), want 200 and visit %d counted by Redis", i+6, v.status, v.body, err, i+6)
			}
			if i >= 0 {
				took = append(took, v.took)
			}
		}
		nsOf := map[string]string{}
		for _, p := range dep.Processes() {
			ns := netnsOf(t, p.Info().PID)
			if ns == self {
				t.Errorf("%s runs in svclab's own network namespace", p.Info())
			}
			nsOf[p.Info().Name] = ns
			for c, ep := range p.Listeners() {
				if !strings.HasPrefix(ep.Addr, "10.77.0.") {
					t.Errorf("%s listens for %s at %s, not on its machine's address", p.Info(), c, ep.Addr)
				}
			}
			if u, err := p.Resources().Sample(context.Background()); err != nil || u.RSSBytes <= 0 {
				t.Errorf("%s: sample %+v, %v", p.Info(), u, err)
			}
		}
		if len(nsOf) != 3 || nsOf["cart"] != nsOf["static"] || nsOf["cart"] == nsOf["frontend"] {
			t.Errorf("namespaces of the programs: %v; want cart and static in one, the frontend in another", nsOf)
		}
		var desc bytes.Buffer
		deploy.Describe(&desc, dep)
		for _, want := range []string{"programs cart (tcp), frontend (http), static (http)", "machine vm1: 10.77.0.3, groups frontend", "machine vm2: 10.77.0.4, groups cart, static", "curl " + dep.GatewayURL() + "/"} {
			if !strings.Contains(desc.String(), want) {
				t.Errorf("describe lacks %q:\n%s", want, desc.String())
			}
		}
		if shaped := strings.Contains(desc.String(), "link vm1-vm2: latency 10ms"); shaped != (link != "") {
			t.Errorf("describe shows the vm1-vm2 link: %v, want %v:\n%s", shaped, link != "", desc.String())
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		return (took[len(took)/2-1] + took[len(took)/2]) / 2
	}
	base := p50("")
	shaped := p50("[deploy.links.\"vm1-vm2\"]\nlatency = \"10ms\"\n")
	t.Logf("p50 call: %s unshaped, %s with a 10 ms vm1-vm2 link", base, shaped)
	// Two round trips across the link; each shaped crossing also costs
	// about 1 ms of wake-up on a loaded machine (TestDeployedLinkLatency).
	if d := shaped - base; d < 19*time.Millisecond || d > 30*time.Millisecond {
		t.Errorf("a 10 ms link under two round trips per call added %s to the p50 call, want 20ms (-1ms/+10ms)", d)
	}
}

// TestProgramsLinkCut cuts the path from the frontend on vm1 to nginx on
// vm2 ([deploy.faults.link_cut]): the frontend's page fetch times out, so
// it answers 502; once the cut ends, calls succeed again.
func TestProgramsLinkCut(t *testing.T) {
	needRoot(t)
	needPrograms(t)
	dep, _ := deployed(t, programSystem(t, "[deploy.faults.link_cut]\ntarget = \"static\"\nstart = \"1s\"\nduration = \"5s\"\n"))
	hf := dep.Capabilities().HopFaults
	if hf == nil {
		t.Fatal("the deployment has no HopFaults")
	}
	faults := dep.Topology().Faults
	i := slices.IndexFunc(faults, func(f runtime.Fault) bool { return f.Kind == spec.FaultLinkCut })
	if i < 0 {
		t.Fatalf("no link_cut in %+v", faults)
	}
	// A connection per call: the frontend serves each on a thread of its
	// own, with fresh connections to its callees.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if v := call(t, client, dep.GatewayURL()); v.status != 200 {
		t.Fatalf("before the cut: %d %q", v.status, v.body)
	}
	stop, err := hf.StartFault(faults[i])
	if err != nil {
		t.Fatal(err)
	}
	// The frontend's page fetch gives up after its 5 s timeout, and the
	// frontend, which the client still reaches, says so.
	if v := call(t, client, dep.GatewayURL()); v.status != http.StatusBadGateway || !strings.Contains(v.body, "timed out") {
		t.Errorf("during the cut: %d %q in %s, want 502 with the fetch's timeout", v.status, v.body, v.took)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if v := call(t, client, dep.GatewayURL()); v.status != 200 {
		t.Errorf("after the cut: %d %q", v.status, v.body)
	}
}

// TestProgramsKill9 kills a real `svclab up` of the exec system on two
// machines with -9: every program dies with it (nginx's workers too), and
// the next start's sweep removes its namespaces.
func TestProgramsKill9(t *testing.T) {
	needRoot(t)
	needPrograms(t)
	cmd := startUpSpec(t, programSystem(t, "[deploy.links.\"vm1-vm2\"]\nlatency = \"1ms\"\n"))
	ns := namespacesOf(t, cmd.Process.Pid)
	if len(ns) != 4 {
		t.Fatalf("namespaces of svclab up: %v, want 4", ns)
	}
	// python3, redis-server, nginx.sh, nginx's master and its worker.
	pids := hostPIDs(t, ns, cmd.Process.Pid)
	if len(pids) < 5 {
		t.Fatalf("%d processes in the machines' namespaces, want at least 5: %s", len(pids), cmdlines(pids))
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitGone(t, pids)
	if _, err := deploy.Sweep(); err != nil {
		t.Fatal(err)
	}
	if left := namespacesOf(t, cmd.Process.Pid); len(left) != 0 {
		t.Errorf("namespaces after the sweep: %v", left)
	}
}

// TestProgramsBadInput: a spec of programs on machines is checked before
// anything starts (and without root), each mistake at its key: a machine
// naming a component that is not there, a command this machine lacks
// (the local deployer's check, which the netns deployer asks), unix
// sockets between machines.
func TestProgramsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"a component that is not there", `groups = ["frontend"]`, `groups = ["frontnd"]`, []string{
			`spec.toml:27: deploy.hosts.vm1.groups: placement split has no group "frontnd" (its groups: cart, frontend, static)`,
			`spec.toml:23: deploy.placement: group "frontend" of placement split is on no machine`,
		}},
		{"a command not found", `"redis-server", "--port"`, `"no-such-server-svclab", "--port"`, []string{
			`spec.toml:14: app.components.cart.command: command "no-such-server-svclab" not found`,
		}},
		{"unix sockets", `deployer = "netns"`, "deployer = \"netns\"\nnetwork = \"unix\"", []string{
			`spec.toml:25: deploy.network: the netns deployer connects its machines over TCP`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := load(t, strings.Replace(programSystem(t, ""), tc.from, tc.to, 1))
			_, _, err := deploy.Resolve(s)
			if err == nil || len(spec.Unjoin(err)) != len(tc.want) {
				t.Fatalf("Resolve: %v\nwant %d error(s): %q", err, len(tc.want), tc.want)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Resolve: %v\nwant %q in it", err, want)
				}
			}
		})
	}
}

// TestProgramsMachineCPUs: programs on machines of one core each run in a
// control group inside their machine's, on its core alone (with what
// they fork: nginx's worker), report the machine's CPU set as their
// limits, and leave no group after Stop.
func TestProgramsMachineCPUs(t *testing.T) {
	needCgroups(t)
	needPrograms(t)
	cpus, err := cgroup.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs for two machines of one core")
	}
	body := strings.NewReplacer(`groups = ["frontend"]`, "groups = [\"frontend\"]\ncpus = 1", `groups = ["cart", "static"]`, "groups = [\"cart\", \"static\"]\ncpus = 1").Replace(programSystem(t, ""))
	dep, _ := deployed(t, body)
	nd := dep.(*netns.Deployment)
	sets := map[string]string{}
	for i, l := range nd.MachineLimits() {
		sets[nd.Machines()[i]] = l.CPUs
	}
	if sets["vm1"] == sets["vm2"] || sets["vm1"] == "" {
		t.Fatalf("machines' CPU sets %v, want one core each, disjoint", sets)
	}
	var dirs []string
	for _, p := range dep.Processes() {
		info := p.Info()
		machine := nd.MachineOf(groupIndex(t, dep, info.Group))
		if info.Limits == nil || info.Limits.CPUs != sets[machine] {
			t.Errorf("%s reports limits %+v, want its machine's CPU set %s", info, info.Limits, sets[machine])
		}
		if u, err := p.Resources().Sample(context.Background()); err != nil || u.Cgroup == nil {
			t.Errorf("sample of %s: %+v, %v; want its cgroup's counters", info, u, err)
		}
		dir := cgroupDir(t, info.PID, "cpuset")
		dirs = append(dirs, dir, filepath.Dir(dir))
	}
	// Every process in a machine's namespace, what the programs forked
	// included (nginx's master and worker beside nginx.sh).
	for i, machine := range nd.Machines() {
		ns := nd.Namespaces()[2+i] // after the router's and the client's
		pids := hostPIDs(t, []string{ns}, os.Getpid())
		if want := map[string]int{"vm1": 1, "vm2": 4}[machine]; len(pids) < want {
			t.Errorf("%d processes on %s (%s), want at least %d", len(pids), machine, cmdlines(pids), want)
		}
		for _, pid := range pids {
			if got := allowedCPUs(t, pid); got != sets[machine] {
				t.Errorf("pid %d (%q) on %s may run on CPU %q, want its machine's %q", pid, cmdline(pid), machine, got, sets[machine])
			}
		}
	}
	if err := dep.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s remains after Stop: %v", d, err)
		}
	}
}
