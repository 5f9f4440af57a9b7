package synth_test

import (
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
			`app.services.a.work.memory: "lognormal(1KiB)": lognormal takes 2 argument(s), got 1`,
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
