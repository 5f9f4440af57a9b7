package synth_test

import (
	"os"
	"strings"
	"testing"

	"github.com/svclab/svclab/apps/synth"
	"github.com/svclab/svclab/internal/runtime"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
	synthpb "github.com/svclab/svclab/proto/synth"
)

// issueSpec is the example of the issue that asked for the app.
const issueSpec = `[app]
name = "synth"
entry = "gateway"

[app.services.gateway]
work = { cpu = "0.3ms" }
response = "1KiB"
calls = [
  { to = "catalog", count = 1 },
  { to = "cart", probability = 0.3 },
]
mode = "parallel"

[app.services.catalog]
work = { cpu = "2ms", memory = "256KiB", sleep = "1ms" }
response = "8KiB"

[app.services.cart]
work = { cpu = "exp(1ms)", sleep = "lognormal(2ms, 0.5)" }
response = "uniform(100B, 200B)"
`

func resolve(t *testing.T, src string) (*runtime.Topology, error) {
	t.Helper()
	s, err := spec.Parse("synth.toml", []byte(src))
	if err != nil {
		return nil, err
	}
	return runtime.Resolve(s)
}

func TestIssueExampleResolves(t *testing.T) {
	topo, err := resolve(t, issueSpec)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range topo.Config.Components() {
		names = append(names, c.Name)
	}
	// Breadth first from the entry, in the order of its calls.
	if got := strings.Join(names, " "); got != "gateway catalog cart" {
		t.Errorf("components %q, want gateway catalog cart", got)
	}
	gw, _ := topo.Component("gateway")
	if strings.Join(gw.Deps, " ") != "catalog cart" {
		t.Errorf("gateway deps %v", gw.Deps)
	}
	if topo.Entry != "gateway" {
		t.Errorf("entry %q", topo.Entry)
	}
	// The host receives the config as JSON; it must decode to the same.
	raw, err := topo.ConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cpu":"300µs"`, `"sleep":"lognormal(2ms, 0.5)"`, `"response":"uniform(100B, 200B)"`, `"probability":0.3`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("config JSON %s lacks %s", raw, want)
		}
	}
}

// TestBadInput: every mistake is reported at once, each at its key and
// line, before anything starts.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string // each a "line: key: text" fragment
	}{
		{"unknown callee, bad probability, unitless and negative work", `[app]
name = "synth"
entry = "a"
[app.services.a]
work = { cpu = "2", memory = "-1KiB" }
calls = [
  { to = "bb" },
  { to = "a2", probability = 1.5 },
]
[app.services.b]
work = { sleep = "-1ms" }
response = "1B"
[app.services.a2]
mode = "both"
`, []string{
			`synth.toml:5: app.services.a.work.cpu: needs a unit`,
			`synth.toml:5: app.services.a.work.memory: must not be negative`,
			`synth.toml:11: app.services.b.work.sleep: must not be negative`,
		}},
		{"semantic errors together", `[app]
name = "synth"
entry = "a"
[app.services.a]
calls = [
  { to = "bb" },
  { to = "a2", probability = 1.5 },
  { to = "b", count = -1 },
]
[app.services.b]
response = "1B"
[app.services.a2]
mode = "both"
`, []string{
			`synth.toml:6: app.services.a.calls[0].to: unknown service "bb" (did you mean "b"?)`,
			`synth.toml:7: app.services.a.calls[1].probability: must be between 0 and 1, got 1.5`,
			`synth.toml:8: app.services.a.calls[2].count: must be between 0 and 1000, got -1`,
			`synth.toml:11: app.services.b.response: must be 0 or at least 2 bytes`,
			`synth.toml:13: app.services.a2.mode: must be "sequential" or "parallel", got "both"`,
		}},
		{"unparsable distributions", `[app]
name = "synth"
entry = "a"
[app.services.a]
work = { cpu = "exp(2ms", sleep = "gamma(1ms)", memory = "lognormal(1KiB)" }
response = "uniform(2KiB, 1KiB)"
`, []string{
			`app.services.a.work.cpu: "exp(2ms": a distribution is name(arguments)`,
			`app.services.a.work.sleep: "gamma(1ms)": unknown distribution "gamma"`,
			`app.services.a.work.memory: "lognormal(1KiB)": lognormal takes 2 arguments, got 1`,
			`synth.toml:6: app.services.a.response: "uniform(2KiB, 1KiB)": max is below min`,
		}},
		{"cycle without a depth bound", `[app]
name = "synth"
entry = "a"
[app.services.a]
calls = [{ to = "b" }]
[app.services.b]
calls = [{ to = "c" }]
[app.services.c]
calls = [{ to = "a" }]
`, []string{
			`synth.toml:9: app.services.c.calls[0].to: calls "a", which closes a cycle (a → b → c → a); set app.max_depth`,
		}},
		{"unknown entry and key", `[app]
name = "synth"
entry = "gw"
[app.services.gateway]
respons = "1KiB"
`, []string{
			`synth.toml:5: app.services.gateway.respons: unknown key (did you mean "response"?)`,
		}},
		{"unknown entry", `[app]
name = "synth"
entry = "gw"
[app.services.gateway]
response = "1KiB"
`, []string{
			`synth.toml:3: app.entry: unknown service "gw"`,
		}},
		{"too many calls", `[app]
name = "synth"
entry = "a"
max_depth = 20
[app.services.a]
calls = [{ to = "a", count = 4 }]
`, []string{
			`synth.toml:5: app.services.a: a request of a is expected to make more than 100000 calls`,
		}},
		{"graph keys", `[app]
name = "synth"
[app.graph]
kind = "erdos_renyi"
services = 6000
m = 0
probability = "exp(0.5)"
count = "uniform(1, 2000)"
mode = "fast"
`, []string{
			`synth.toml:4: app.graph.kind: must be "barabasi_albert", got "erdos_renyi"`,
			`synth.toml:5: app.graph.services: must be between 2 and 5000`,
			`synth.toml:6: app.graph.m: must be at least 1`,
			`synth.toml:7: app.graph.probability: must stay within 0 and 1`,
			`synth.toml:8: app.graph.count: must stay within 0 to 1000`,
			`synth.toml:9: app.graph.mode: must be "sequential" or "parallel", got "fast"`,
		}},
		{"both listed and generated", `[app]
name = "synth"
[app.services.a]
[app.graph]
kind = "barabasi_albert"
services = 3
m = 1
`, []string{
			`synth.toml:4: app.graph: give either [app.services.<name>] or [app.graph], not both`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolve(t, tc.src)
			if err == nil {
				t.Fatal("resolved; want errors")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestCycleWithDepthBound(t *testing.T) {
	topo, err := resolve(t, `[app]
name = "synth"
entry = "a"
max_depth = 3
[app.services.a]
calls = [{ to = "b" }]
[app.services.b]
calls = [{ to = "a" }]
`)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topo.Config.Components()); n != 2 {
		t.Errorf("%d components", n)
	}
}

func TestDistributionText(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"2ms", "2ms"},
		{" exp( 2ms ) ", "exp(2ms)"},
		{"lognormal(2ms, 0.5)", "lognormal(2ms, 0.5)"},
		{"uniform(1ms,3ms)", "uniform(1ms, 3ms)"},
		{"0.3ms", "300µs"},
		{"0", "0s"},
	} {
		var d synth.Duration
		if err := d.UnmarshalText([]byte(tc.in)); err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if d.String() != tc.out {
			t.Errorf("%q reads as %q, want %q", tc.in, d, tc.out)
		}
		var again synth.Duration
		if err := again.UnmarshalText([]byte(d.String())); err != nil || again != d {
			t.Errorf("%q does not read back: %v %v", d, again, err)
		}
	}
}

// TestPaths: a path is checked against the graph at its line, and becomes
// a default request of its own.
func TestPaths(t *testing.T) {
	_, err := resolve(t, issueSpec+`[deploy]
placement = "monolith"
`)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(issueSpec, `entry = "gateway"`, `entry = "gateway"
paths = [
  "catalog cart",
  "catalog(cart)",
  "cart(",
]`, 1)
	_, err = resolve(t, src)
	for _, want := range []string{
		`synth.toml:6: app.paths[1]: catalog does not call cart (its calls: none)`,
		`synth.toml:7: app.paths[2]: the '(' after cart is not closed`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "paths[0]") {
		t.Errorf("a good path refused: %v", err)
	}
	topo, err := resolve(t, strings.Replace(issueSpec, `entry = "gateway"`, `entry = "gateway"
paths = ["catalog catalog cart"]`, 1))
	if err != nil {
		t.Fatal(err)
	}
	reqs := topo.Requests()
	if len(reqs) != 1 || reqs[0].Name != "path1" || reqs[0].Message.(*synthpb.CallRequest).GetPlan().GetCalls()[1].GetTo() != "catalog" {
		t.Errorf("requests %v", reqs)
	}
}

// TestEveryMistakeInOnePass: a spec's mistakes come in one invocation,
// sorted by line, each once: the values that do not parse and the unknown
// keys beside the graph's errors (unknown callee, probability, count,
// response, mode), the cycles, the paths and the topology's size. A check
// is left out only when it depends on a value found wrong. Each spec
// once took two or three invocations.
func TestEveryMistakeInOnePass(t *testing.T) {
	everyMistake, err := os.ReadFile("testdata/every-mistake.toml")
	if err != nil {
		t.Fatal(err)
	}
	const graph = `[app]
name = "synth"
entry = "s99"
paths = ["s1(", "s2"]
[app.graph]
kind = "barabasi_albert"
services = 10
m = 2
work = { cpu = "exp(100)" }
probability = "uniform(0.5, 1.5)"
count = "uniform(1, 2000)"
mode = "fast"
`
	cases := []struct {
		name string
		src  string
		want []string // every line of the error, in order; each a prefix
	}{{
		name: "listed services",
		src:  string(everyMistake),
		want: []string{
			`synth.toml:9: app.services.gateway.work.cpu: needs a unit, e.g. "2s"`,
			`synth.toml:10: app.services.gateway.response: must be 0 or at least 2 bytes`,
			`synth.toml:12: app.services.gateway.calls[0].to: unknown service "catalgo" (did you mean "catalog"?)`,
			`synth.toml:13: app.services.gateway.calls[1].probabilty: unknown key (did you mean "probability"?)`,
			`synth.toml:14: app.services.gateway.calls[2].probability: must be between 0 and 1, got 1.5`,
			`synth.toml:15: app.services.gateway.calls[3].count: must be between 0 and 1000, got -1`,
			`synth.toml:17: app.services.gateway.mode: must be "sequential" or "parallel", got "paralel"`,
			`synth.toml:20: app.services.catalog.work.cpu: not a duration`,
			`synth.toml:20: app.services.catalog.work.sleep: "exp(2ms": a distribution is name(arguments)`,
			`synth.toml:21: app.services.catalog.respnse: unknown key (did you mean "response"?)`,
			`synth.toml:22: app.services.catalog.calls[0].to: calls "gateway", which closes a cycle (gateway → catalog → gateway)`,
			`synth.toml:25: app.services.cart.work.memory: "gamma(1KiB)": unknown distribution "gamma"`,
			`synth.toml:25: app.services.cart.work.sleep: must not be negative, got -1ms`,
			`synth.toml:26: app.services.cart.response: "uniform(3KiB, 1KiB)": max is below min`,
			`synth.toml:27: app.services.cart.calls[0].to: calls "cart", which closes a cycle (cart → cart)`,
			`synth.toml:30: app.services.extra.work.cpu: "lognormal(2ms)": lognormal takes 2 arguments, got 1`,
		},
	}, {
		// The entry is unknown: the cycles are still found, from every
		// service, and a path's syntax checked; not its calls, which
		// start at the entry.
		name: "unknown entry, cycle, paths",
		src: `[app]
name = "synth"
entry = "gw"
paths = ["a(b", "a b"]
[app.services.a]
calls = [{ to = "b" }]
[app.services.b]
calls = [
  { to = "a" },
  { to = "c" },
]
`,
		want: []string{
			`synth.toml:3: app.entry: unknown service "gw"`,
			`synth.toml:4: app.paths[0]: the '(' after a is not closed`,
			`synth.toml:9: app.services.b.calls[0].to: calls "a", which closes a cycle (a → b → a)`,
			`synth.toml:10: app.services.b.calls[1].to: unknown service "c"`,
		},
	}, {
		// A path through a call to an unknown service is checked up to
		// it; beside a wrong mode, a path off the graph is found.
		name: "paths beside the graph's errors",
		src: `[app]
name = "synth"
entry = "a"
paths = ["nope(a)", "b(a)"]
[app.services.a]
calls = [{ to = "nope" }, { to = "b", probability = -0.5 }]
[app.services.b]
mode = "both"
`,
		want: []string{
			`synth.toml:4: app.paths[1]: b does not call a (its calls: none)`,
			`synth.toml:6: app.services.a.calls[0].to: unknown service "nope"`,
			`synth.toml:6: app.services.a.calls[1].probability: must be between 0 and 1, got -0.5`,
			`synth.toml:8: app.services.b.mode: must be "sequential" or "parallel", got "both"`,
		},
	}, {
		// The calls' expected number needs only what is right: a wrong
		// edge left out, the rest already too many.
		name: "too many calls beside other mistakes",
		src: `[app]
name = "synth"
entry = "a"
max_depth = 20
[app.services.a]
calls = [{ to = "a", count = 4 }, { to = "b", count = 2000 }]
[app.services.b]
response = "1B"
`,
		want: []string{
			`synth.toml:5: app.services.a: a request of a is expected to make more than 100000 calls`,
			`synth.toml:6: app.services.a.calls[1].count: must be between 0 and 1000, got 2000`,
			`synth.toml:8: app.services.b.response: must be 0 or at least 2 bytes`,
		},
	}, {
		// A generated graph whose shape is right is generated, and its
		// entry and paths checked beside its other keys' mistakes.
		name: "graph",
		src:  graph,
		want: []string{
			`synth.toml:3: app.entry: unknown service "s99" (did you mean "s9"?)`,
			`synth.toml:4: app.paths[0]: the '(' after s1 is not closed`,
			`synth.toml:9: app.graph.work.cpu: "exp(100)": needs a unit, e.g. "100s"`,
			`synth.toml:10: app.graph.probability: must stay within 0 and 1`,
			`synth.toml:11: app.graph.count: must stay within 0 to 1000 calls an edge`,
			`synth.toml:12: app.graph.mode: must be "sequential" or "parallel", got "fast"`,
		},
	}, {
		// One whose shape is wrong generates nothing to check the entry
		// against; the paths' syntax is still checked.
		name: "graph's shape wrong",
		src:  strings.Replace(graph, "services = 10\nm = 2", "services = 6000\nm = 0", 1),
		want: []string{
			`synth.toml:4: app.paths[0]: the '(' after s1 is not closed`,
			`synth.toml:7: app.graph.services: must be between 2 and 5000`,
			`synth.toml:8: app.graph.m: must be at least 1 and below services (6000), got 0`,
			`synth.toml:9: app.graph.work.cpu: "exp(100)": needs a unit`,
			`synth.toml:10: app.graph.probability: must stay within 0 and 1`,
			`synth.toml:11: app.graph.count: must stay within 0 to 1000 calls an edge`,
			`synth.toml:12: app.graph.mode: must be "sequential" or "parallel", got "fast"`,
		},
	}, {
		// Which services are meant is not known; each table's own
		// mistakes are.
		name: "both listed and generated",
		src: `[app]
name = "synth"
[app.services.a]
calls = [{ to = "b" }]
[app.graph]
kind = "barabasi"
services = 3
m = 1
`,
		want: []string{
			`synth.toml:4: app.services.a.calls[0].to: unknown service "b"`,
			`synth.toml:5: app.graph: give either [app.services.<name>] or [app.graph], not both`,
			`synth.toml:6: app.graph.kind: must be "barabasi_albert", got "barabasi"`,
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolve(t, tc.src)
			if err == nil {
				t.Fatal("resolved; want errors")
			}
			got := strings.Split(err.Error(), "\n")
			for i := range max(len(got), len(tc.want)) {
				switch {
				case i >= len(got):
					t.Errorf("missing line %d: %s", i+1, tc.want[i])
				case i >= len(tc.want):
					t.Errorf("unexpected line %d: %s", i+1, got[i])
				case !strings.HasPrefix(got[i], tc.want[i]):
					t.Errorf("line %d:\n  got  %s\n  want %s…", i+1, got[i], tc.want[i])
				}
			}
		})
	}
}
