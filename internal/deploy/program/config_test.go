package program

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// base is a sound two-program spec; the cases add to it.
const base = `[app]
name = "exec"
entry = "web"

[app.components.web]
command = ["python3", "-m", "http.server", "{port}"]
protocol = "http"
health = "/"
calls = ["db"]
env = { DB = "{addr:db}" }

[app.components.db]
command = ["redis-server", "--port", "{port}"]
protocol = "tcp"
`

// located is one error a spec must give: at key, on line, saying want.
type located struct {
	key  string
	line int
	want string
}

func parse(t *testing.T, src string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("t.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkErrors asserts err holds exactly the located errors, in any order.
func checkErrors(t *testing.T, err error, want []located) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", want)
	}
	got := spec.Unjoin(err)
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(got), len(want), err)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			var se *spec.Error
			if errors.As(g, &se) && se.Key == w.key && se.Line == w.line && strings.Contains(se.Err.Error(), w.want) && se.File == "t.toml" {
				found = true
			}
		}
		if !found {
			t.Errorf("no error at %s (line %d) saying %q in:\n%v", w.key, w.line, w.want, err)
		}
	}
}

func TestResolveRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []located
	}{
		{"template names an unknown component and every mistake at once", strings.Replace(base, `DB = "{addr:db}"`, `DB = "{addr:dbb}"`, 1) + `
[app.components.extra]
command = ["x"]
protocol = "udp"
health = "/h"
`, []located{
			{"app.components.web.env.DB", 10, `{addr:dbb} names no component (did you mean "db"?)`},
			{"app.components.extra.protocol", 18, `unknown protocol "udp"`},
		}},
		{"a health path on a tcp program", base + `health = "/ping"
`, []located{{"app.components.db.health", 15, `"/ping" is an HTTP path, but the program speaks tcp`}}},
		{"a tcp entry", strings.Replace(base, `entry = "web"`, `entry = "db"`, 1), []located{{"app.entry", 3, "speaks raw tcp"}}},
		{"calls an unknown component", strings.Replace(base, `calls = ["db"]`, `calls = ["db", "cache"]`, 1), []located{{"app.components.web.calls", 9, `no component "cache"`}}},
		{"port without image", base + "port = 80\n", []located{{"app.components.db.port", 15, "port goes with image"}}},
		{"inproc", base + "[deploy]\ntransport = \"inproc\"\n", []located{{"deploy.transport", 16, "each component of app exec is a program of its own"}}},
		{"a transport other than the programs'", base + "[deploy]\ntransport = \"http\"\n", []located{{"deploy.transport", 16, "component db speaks tcp (app.components.db.protocol (line 14))"}}},
		{"two programs in one process", base + "[deploy]\nplacement = \"monolith\"\n", []located{{"deploy.placement", 16, "would put programs together in one process"}}},
		{"a placement of one's own with two programs in a group", base + "[deploy]\nplacement = \"mine\"\n[deploy.placements]\nmine = [[\"web\", \"db\"]]\n", []located{{"deploy.placements.mine", 18, "puts web and db in one process"}}},
		{"mtls without sidecars, a sidecar other than envoy", base + "[deploy]\nmtls = true\ntracing = 0.5\n", []located{
			{"deploy.mtls", 16, `deploy.mtls is a feature of svclab's own hosts, which a program has not: set deploy.sidecar = "envoy"`},
			{"deploy.tracing", 17, "deploy.tracing is a feature of svclab's own hosts"},
		}},
		{"sidecars of another kind, a node proxy", base + "[deploy]\nsidecar = \"nginx\"\nproxy_mode = \"node\"\n", []located{
			{"deploy.sidecar", 16, `programs have envoy sidecars alone, not "nginx" yet`},
			{"deploy.proxy_mode", 17, "each replica of a program has sidecars of its own"},
		}},
		{"a load over another protocol than the entry's", strings.NewReplacer(`protocol = "http"`, `protocol = "grpc"`, `health = "/"`, `health = "grpc"`).Replace(base) + "[load]\nrate = 5\n", []located{
			{"load.protocol", 15, `is "http", but the entry web speaks grpc (app.components.web.protocol (line 7)): set load.protocol = "grpc"`},
		}},
		{"another deployer", base + "[deploy]\ndeployer = \"external\"\n", []located{{"deploy.deployer", 16, `deployer "external" cannot start them`}}},
		{"replicas, an autoscaler and an image alone on the netns deployer", strings.Replace(base, `command = ["redis-server", "--port", "{port}"]`, `image = "redis:7"`, 1) + "[deploy]\ndeployer = \"netns\"\n[deploy.replicas]\nweb = 2\ndb = 1\n[deploy.autoscale.db]\nmin = 1\nmax = 2\ncpu_target = 50\n", []located{
			{"app.components.db", 12, "has an image and no command: the netns deployer runs a command"},
			{"deploy.replicas.web", 18, `is not supported with deploy.deployer = "netns" yet`},
			{"deploy.autoscale.db", 20, `is not supported with deploy.deployer = "netns" yet`},
		}},
		{"sidecars on the netns deployer", base + "[deploy]\ndeployer = \"netns\"\nsidecar = \"envoy\"\n", []located{
			{"deploy.sidecar", 17, "the netns deployer does not run sidecars on its machines yet"},
		}},
		{"{port} on unix sockets, replicas on them", strings.Replace(base, `DB = "{addr:db}"`, `DB = "{addr:db}", PORT = "{port}"`, 1) + "[deploy]\nnetwork = \"unix\"\n[deploy.replicas]\ndb = 2\n", []located{
			{"app.components.web.command", 6, `argument 3: {port} has no meaning on a unix socket (deploy.network = "unix" (line 16)): write {listen}`},
			{"app.components.web.env.PORT", 10, "{port} has no meaning on a unix socket"},
			{"app.components.db.command", 13, "argument 2: {port} has no meaning on a unix socket"},
			{"deploy.replicas.db", 18, `is not supported with deploy.network = "unix" yet`},
		}},
		{"a hop fault on unix sockets", strings.NewReplacer(`"{port}"]`, `"{listen}"]`).Replace(base) + "[deploy]\nnetwork = \"unix\"\n[deploy.faults.reset]\ntarget = \"db\"\nfraction = 0.5\n", []located{
			{"deploy.faults.reset.target", 18, `the hop into group db is on network "unix"; faults act on tcp hops`},
		}},
		{"unix sockets on the kube deployer", strings.NewReplacer(`command = ["python3", "-m", "http.server", "{port}"]`, "image = \"web:1\"\nport = 80", `command = ["redis-server", "--port", "{port}"]`, "image = \"redis:7\"\nport = 6379").Replace(base) + "[deploy]\ndeployer = \"kube\"\nnetwork = \"unix\"\n", []located{
			{"deploy.network", 19, "the kube deployer runs each program in a pod, reached over TCP at its port"},
		}},
		{"metrics without sidecars", base + "[deploy]\nmetrics = true\n", []located{
			{"deploy.metrics", 16, `does not apply to app exec without sidecars: deploy.metrics is a feature of svclab's own hosts, which a program has not: set deploy.sidecar = "envoy", whose proxies carry it`},
		}},
		{"autoscale under kube", strings.NewReplacer(`command = ["python3", "-m", "http.server", "{port}"]`, "image = \"web:1\"\nport = 80", `command = ["redis-server", "--port", "{port}"]`, "image = \"redis:7\"\nport = 6379").Replace(base) + "[deploy]\ndeployer = \"kube\"\n[deploy.autoscale.db]\nmin = 1\nmax = 2\ncpu_target = 50\n", []located{
			{"deploy.autoscale.db", 19, "the kube deployer renders a program's replicas, not an autoscaler for it"},
		}},
		{"faults on the entry's hop, a replica db has not, a target that names nothing", base + "[deploy.faults.latency_spike]\ntarget = \"web\"\ndelay = \"10ms\"\n[deploy.faults.kill]\ntarget = \"db\"\nreplica = 1\n[deploy.faults.reset]\ntarget = \"cache\"\nfraction = 0.5\n", []located{
			{"deploy.faults.latency_spike.target", 16, "no other group calls group web, so its hop carries nothing to fault"},
			{"deploy.faults.kill.replica", 20, "group db has 1 replica,"},
			{"deploy.faults.reset.target", 22, `no group or component "cache" in placement "split"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runtime.Resolve(parse(t, tc.src))
			checkErrors(t, err, tc.want)
		})
	}
}

// TestUnknownComponentListedOnce: a name that is no component, and close
// to none, is answered with the components, once (DidYouMean lists them).
func TestUnknownComponentListedOnce(t *testing.T) {
	for _, tc := range []struct{ name, src, key string }{
		{"entry", strings.Replace(base, `entry = "web"`, `entry = "cache"`, 1), "app.entry"},
		{"calls", strings.Replace(base, `calls = ["db"]`, `calls = ["db", "cache"]`, 1), "app.components.web.calls"},
		{"addr", strings.Replace(base, `DB = "{addr:db}"`, `DB = "{addr:cache}"`, 1), "app.components.web.env.DB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runtime.Resolve(parse(t, tc.src))
			var se *spec.Error
			if !errors.As(err, &se) || se.Key != tc.key {
				t.Fatalf("want an error at %s, got %v", tc.key, err)
			}
			if msg := se.Err.Error(); strings.Count(msg, "db, web") != 1 {
				t.Errorf("the components should be listed once: %s", msg)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	topo, err := runtime.Resolve(parse(t, base))
	if err != nil {
		t.Fatal(err)
	}
	if topo.Entry != "web" || topo.Transport != "http" || len(topo.Groups) != 2 || topo.Placement != runtime.PlacementSplit {
		t.Errorf("topology: entry %s, transport %s, placement %s, groups %v", topo.Entry, topo.Transport, topo.Placement, topo.Groups)
	}
	for _, g := range topo.Groups {
		if len(g.Components) != 1 || g.Components[0] != g.Name || g.Replicas != 1 {
			t.Errorf("group %+v: want one program, one replica", g)
		}
	}
	if Of(topo) == nil {
		t.Error("Of(an exec topology) is nil")
	}
}

// TestResolveMesh: with Envoy sidecars the mesh's keys apply to programs,
// with replicas and autoscalers too: the proxies carry them.
func TestResolveMesh(t *testing.T) {
	topo, err := runtime.Resolve(parse(t, base+"[deploy]\nsidecar = \"envoy\"\nmtls = true\ntracing = 0.5\nmetrics = true\n[deploy.replicas]\nweb = 2\n[deploy.autoscale.db]\nmin = 1\nmax = 2\ncpu_target = 50\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m := topo.Mesh; !m.MTLS || m.Tracing != 0.5 || !m.Metrics {
		t.Errorf("mesh %+v, want mtls, tracing 0.5 and metrics", m)
	}
	if g := topo.Groups[topo.GroupOf("web")]; g.Replicas != 2 {
		t.Errorf("web has %d replicas, want 2", g.Replicas)
	}
}

// TestResolveFaults: [deploy.faults] resolve against the programs: the
// hop into a program another program calls, and a replica it has.
func TestResolveFaults(t *testing.T) {
	topo, err := runtime.Resolve(parse(t, base+"[deploy.replicas]\ndb = 2\n[deploy.faults.link_cut]\ntarget = \"db\"\nstart = \"1s\"\nduration = \"2s\"\n[deploy.faults.kill]\ntarget = \"db\"\nreplica = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	db := topo.GroupOf("db")
	want := []runtime.Fault{
		{Kind: spec.FaultLinkCut, Target: "db", Group: db, Start: time.Second, Duration: 2 * time.Second, Fraction: 1},
		{Kind: spec.FaultKill, Target: "db", Group: db, Replica: 1},
	}
	if !slices.Equal(topo.Faults, want) {
		t.Errorf("faults %+v, want %+v", topo.Faults, want)
	}
}

func TestCheckMachine(t *testing.T) {
	dir := t.TempDir()
	src := strings.Replace(base, `command = ["redis-server"`, `command = ["no-such-program-svclab"`, 1) + "dir = \"nowhere\"\n"
	src = strings.Replace(src, `"python3", "-m"`, `"./bin/missing", "-m"`, 1)
	path := filepath.Join(dir, "t.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckMachine(s, topo)
	for _, want := range []string{
		"t.toml:6: app.components.web.command: command \"./bin/missing\" not found",
		"t.toml:15: app.components.db.dir: " + filepath.Join(dir, "nowhere") + " is not a directory",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckMachine: %v\nwant %q", err, want)
		}
	}
	// With the directory there, the command is looked up on PATH.
	if err := os.Mkdir(filepath.Join(dir, "nowhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An absolute dir is taken as it is.
	cfg := Of(topo)
	if got := cfg.Programs["db"].WorkDir("/elsewhere"); got != "/elsewhere/nowhere" {
		t.Errorf("WorkDir of a relative dir: %s", got)
	}
	cfg.Programs["db"].Dir = filepath.Join(dir, "nowhere")
	err = CheckMachine(s, topo)
	if want := `t.toml:13: app.components.db.command: command "no-such-program-svclab" not found: exec: "no-such-program-svclab": executable file not found in $PATH`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckMachine: %v\nwant %q", err, want)
	}
}

func TestExpand(t *testing.T) {
	a := Addresses{Listen: "127.0.0.1:9", Port: "9", Peers: map[string]string{"db": "127.0.0.1:7"}}
	for in, want := range map[string]string{
		"--listen={listen}":        "--listen=127.0.0.1:9",
		"{port}":                   "9",
		"redis://{addr:db}/0":      "redis://127.0.0.1:7/0",
		`{"json": {"left": true}}`: `{"json": {"left": true}}`,
	} {
		if got := a.Expand(in); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEntryHidesNoCommand: with app.entry wrong or missing there is no
// topology, and so no CheckMachine; the programs' commands and
// directories are checked all the same, beside the entry's mistake, for
// the deployers that run them here.
func TestEntryHidesNoCommand(t *testing.T) {
	const front = `[app.components.front]
command = ["./nope.sh", "--listen", "{listen}"]
protocol = "http"
[app.components.back]
command = ["sh", "-c", "true"]
protocol = "http"
dir = "nowhere"
`
	for _, tc := range []struct {
		name, head string
		want       []string // "line key"
	}{
		{name: "entry misspelt", head: "[app]\nname = \"exec\"\nentry = \"frnt\"\n", want: []string{
			"3 app.entry", "5 app.components.front.command", "10 app.components.back.dir",
		}},
		{name: "entry missing", head: "[app]\nname = \"exec\"\n\n", want: []string{
			"1 app.entry", "5 app.components.front.command", "10 app.components.back.dir",
		}},
		{name: "entry misspelt, kube", head: "[deploy]\ndeployer = \"kube\"\n[app]\nname = \"exec\"\nentry = \"frnt\"\n", want: []string{
			// No command is looked for here: the programs run from images.
			"5 app.entry", "6 app.components.front", "9 app.components.back",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.toml")
			s, err := spec.Parse(path, []byte(tc.head+front))
			if err != nil {
				t.Fatal(err)
			}
			topo, err := runtime.ResolvePartly(s)
			if topo != nil {
				t.Errorf("a topology without an entry")
			}
			got := spec.ErrorLines(err, path)
			slices.Sort(got)
			slices.Sort(tc.want)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%d errors at %q, want %d at %q:\n%v", len(got), got, len(tc.want), tc.want, err)
			}
		})
	}
}
