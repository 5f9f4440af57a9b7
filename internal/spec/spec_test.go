package spec

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

const good = `# a comment
[app]
name = "chain"
hops = 3

[deploy]
transport = "http"
placement = "two"
[deploy.placements]
two = [["hop1"], ["hop2", "hop3"]]

[load]
rate = 100

[experiment]
design = "fractional"
repetitions = 3
seed = 7
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
"app.hops" = [3, 5]
"load.rate" = [10, 100]
[experiment.generators]
C = "AB"
`

type appCfg struct {
	Hops    int    `toml:"hops"`
	Payload string `toml:"payload"`
}

type loadCfg struct {
	Rate     float64  `toml:"rate"`
	Duration Duration `toml:"duration"`
	Stages   []struct {
		Rate float64 `toml:"rate"`
	} `toml:"stages"`
}

func TestParseGood(t *testing.T) {
	s, err := Parse("good.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s.App.Name != "chain" || s.Deploy.Transport != "http" || s.Deploy.Placement != "two" {
		t.Errorf("got app %+v deploy %+v", s.App, s.Deploy)
	}
	if got := s.Deploy.Placements["two"]; len(got) != 2 || got[1][1] != "hop3" {
		t.Errorf("placements = %v", s.Deploy.Placements)
	}
	if s.Deploy.HTTPCodec != HTTPCodecFast {
		t.Errorf("deploy.http_codec left out = %q, want %q", s.Deploy.HTTPCodec, HTTPCodecFast)
	}
	if s.Deploy.Deployer != "local" || s.Deploy.StartTimeout.D() != DefaultStartTimeout {
		t.Errorf("defaults not applied: %+v", s.Deploy)
	}
	e := s.Experiment
	if e.Name != "good" || e.Repetitions != 3 || *e.Seed != 7 || e.Order != "random" || e.Response != "p99_ms" {
		t.Errorf("experiment = %+v", e)
	}
	var names, letters []string
	for _, f := range e.Factors {
		names = append(names, f.Name)
		letters = append(letters, f.Letter)
	}
	if strings.Join(names, ",") != "deploy.transport,app.hops,load.rate" || strings.Join(letters, "") != "ABC" {
		t.Errorf("factors in wrong order: %v %v", names, letters)
	}
	if e.Factors[0].Line != 20 || e.Factors[2].Line != 22 {
		t.Errorf("factor lines = %d, %d; want 20, 22", e.Factors[0].Line, e.Factors[2].Line)
	}
	if len(e.Generators) != 1 || e.Generators[0] != (Generator{Letter: "C", Word: "AB", Line: 24}) {
		t.Errorf("generators = %+v", e.Generators)
	}
	var app appCfg
	if err := s.Decode("app", &app); err != nil || app.Hops != 3 {
		t.Errorf("Decode(app) = %+v, %v", app, err)
	}
}

func TestErrorsNameKeyAndLine(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // substring of the error, which starts with file:line
	}{
		{"syntax", "[deploy]\ntransport = \n", "x.toml:2:"},
		{"unknown table", "[app]\nname = \"chain\"\n\n[deplyo]\ntransport = \"grpc\"\n", "x.toml:4: deplyo: unknown table"},
		{"unknown deploy key", "[deploy]\ntransprot = \"grpc\"\n", `x.toml:2: deploy.transprot: unknown key (did you mean "transport"?)`},
		// A deployer's table is a key of [deploy] too, though its owner decodes it.
		{"deployer table misspelt", "[deploy.hots]\nvm1 = {groups = [\"hop1\"]}\n", `x.toml:1: deploy.hots: unknown key (did you mean "hosts"?)`},
		// A table only a deeper header makes is at that header, not at its
		// parent's.
		{"table implied by a header misspelt", "[deploy]\nsidecar = \"envoy\"\n\n[deploy.host.vm1]\ngroups = [\"a\"]\n", `x.toml:4: deploy.host: unknown key (did you mean "hosts"?)`},
		{"unknown table implied by a header", "[app]\nname = \"chain\"\n\n[deplyo.replicas]\nweb = 2\n", "x.toml:4: deplyo: unknown table"},
		{"table implied by an array of tables misspelt", "[deploy]\nsidecar = \"envoy\"\n\n[[deploy.faultz.kill]]\ntarget = \"a\"\n", `x.toml:4: deploy.faultz: unknown key (did you mean "faults"?)`},
		{"deployer table not a table", "[deploy]\nlinks = 3\n", `x.toml:2: deploy.links: must be a table, got 3`},
		{"wrong type", "[deploy]\n\ntransport = 5\n", "x.toml:3: deploy.transport:"},
		// The other mesh keys are true or false; this one is a ratio.
		{"tracing as a boolean", "[deploy]\ntracing = true\n", "x.toml:2: deploy.tracing: must be a number, got true; deploy.tracing is a sampling ratio from 0.0 (off) to 1.0 (every request), the share of requests traced: write 1.0 to trace every one"},
		{"bad network", "[deploy]\nnetwork = \"udp\"\n", `x.toml:2: deploy.network: must be "tcp" or "unix", got "udp"`},
		{"bad http codec", "[deploy]\ntransport = \"http\"\nhttp_codec = \"sonic\"\n", `x.toml:3: deploy.http_codec: must be "fast" or "protojson", got "sonic"`},
		{"empty http codec", "[deploy]\nhttp_codec = \"\"\n", `x.toml:2: deploy.http_codec: must be "fast" or "protojson", got ""`},
		{"bad duration", "[deploy]\nstart_timeout = \"soon\"\n", `x.toml:2: deploy.start_timeout`},
		{"app name type", "[app]\nname = 3\n", "x.toml:2: app.name: must be a non-empty string"},
		{"one level", "[experiment.factors]\n\"deploy.transport\" = [\"grpc\"]\n", `x.toml:2: experiment.factors."deploy.transport": a factor needs at least two levels, got 1`},
		{"levels not list", "[experiment]\n[experiment.factors]\n\"load.rate\" = 5\n", `x.toml:3: experiment.factors."load.rate": levels must be a list`},
		{"duplicate level", "[experiment.factors]\n\"load.rate\" = [1, 2, 1]\n", "level 1 is listed twice"},
		{"bad order", "[experiment]\norder = \"shuffled\"\n", `x.toml:2: experiment.order: must be "random", "sequential", "interleaved" or "blocked"`},
		{"bad repetitions", "[experiment]\nrepetitions = 0\n", "x.toml:2: experiment.repetitions: must be between 1 and 10000"},
		{"fractional without generators", "[experiment]\ndesign = \"fractional\"\n", "x.toml:2: experiment.design: a fractional design needs"},
		{"generator unknown letter", "[experiment]\ndesign = \"fractional\"\n[experiment.factors]\na = [1,2]\nb = [1,2]\n[experiment.generators]\nD = \"AB\"\n", "x.toml:7: experiment.generators.D: no factor has letter D"},
		{"generator self", "[experiment]\ndesign = \"fractional\"\n[experiment.factors]\na = [1,2]\nb = [1,2]\n[experiment.generators]\nB = \"AB\"\n", "letter B in \"AB\" is not another factor"},
		{"unknown experiment key", "[experiment]\nrepetition = 3\n", `x.toml:2: experiment.repetition: unknown key (did you mean "repetitions"?)`},
		{"bad response", "[experiment]\nresponse = \"p42\"\n", "x.toml:2: experiment.response: unknown metric"},
		{"empty name", "[experiment]\nname = \"\"\n", `x.toml:2: experiment.name: must be letters, digits, '.', '_' or '-' (it names a directory), got ""`},
		{"zero duration", "[experiment]\nduration = \"0s\"\n", "x.toml:2: experiment.duration: must be > 0, got 0s (leave the key out for load.duration)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *spec.Error", err)
			}
		})
	}
}

func TestDecodeCallerTables(t *testing.T) {
	src := "[app]\nname = \"chain\"\nhops = 3\npayload = \"small\"\nhopz = 2\n\n[load]\nrate = 10\n[[load.stages]]\nrate = 1\n[[load.stages]]\nrat = 2\n"
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var app appCfg
	err = s.Decode("app", &app)
	if err == nil || !strings.Contains(err.Error(), `x.toml:5: app.hopz: unknown key (did you mean "hops"?)`) {
		t.Errorf("Decode(app) error = %v", err)
	}
	var l loadCfg
	err = s.Decode("load", &l)
	if err == nil || !strings.Contains(err.Error(), "load.stages") || !strings.Contains(err.Error(), "rat") {
		t.Errorf("Decode(load) error = %v", err)
	}
}

func TestWith(t *testing.T) {
	s, err := Parse("x.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.With(map[string]any{"deploy.transport": "grpc", "deploy.http_codec": "protojson", "app.hops": int64(5), "load.duration": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Deploy.Transport != "grpc" || s.Deploy.Transport != "http" {
		t.Errorf("With changed the wrong spec: run %q, base %q", r.Deploy.Transport, s.Deploy.Transport)
	}
	if r.Deploy.HTTPCodec != HTTPCodecProtojson || s.Deploy.HTTPCodec != HTTPCodecFast {
		t.Errorf("With: http_codec of run %q, of base %q", r.Deploy.HTTPCodec, s.Deploy.HTTPCodec)
	}
	var app appCfg
	if err := r.Decode("app", &app); err != nil || app.Hops != 5 {
		t.Errorf("app = %+v, %v", app, err)
	}
	var l loadCfg
	if err := r.Decode("load", &l); err != nil || l.Duration.D() != 2*time.Second || l.Rate != 100 {
		t.Errorf("load = %+v, %v", l, err)
	}
	if v, ok := r.Lookup("app.hops"); !ok || v != int64(5) {
		t.Errorf("Lookup(app.hops) = %v, %v", v, ok)
	}

	// A level that does not fit is reported at the factor's line.
	bad, err := s.With(map[string]any{"load.rate": "fast"})
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Decode("load", &l)
	if err == nil || !strings.HasPrefix(err.Error(), "x.toml:22: load.rate:") {
		t.Errorf("bad level error = %v", err)
	}
	// So is a path that names no key, by the factor's key and with the
	// key it likely meant in full (TestFactorUnknownKey).
	bad, err = s.With(map[string]any{"load.rte": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Decode("load", &l)
	if err == nil || !strings.Contains(err.Error(), `experiment.factors."load.rte": unknown key (did you mean "load.rate"?)`) {
		t.Errorf("unknown path error = %v", err)
	}
	_, err = s.With(map[string]any{"experiment.seed": int64(1)})
	if err == nil || !strings.Contains(err.Error(), "a factor must be a key of [app], [deploy] or [load]") {
		t.Errorf("experiment factor error = %v", err)
	}
	_, err = s.With(map[string]any{"deploy.transport.x": int64(1)})
	if err == nil || !strings.Contains(err.Error(), "deploy.transport is not a table") {
		t.Errorf("path through scalar error = %v", err)
	}
	_, err = s.With(map[string]any{"deploy.transport": "x", "deploy.network": "udp"})
	if err == nil || !strings.Contains(err.Error(), "deploy.network") {
		t.Errorf("bad deploy level error = %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "abc", 0}, {"transprot", "transport", 2}, {"rate", "rte", 1}, {"kitten", "sitting", 3}} {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}

func TestLocate(t *testing.T) {
	s, err := Parse("x.toml", []byte("[load]\nrate = -5\n\nusers = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Locate("load", errors.Join(&KeyError{Key: "rate", Msg: "must be > 0"}, &KeyError{Key: "load.users", Msg: "open loop has no users"}, errors.New("something else")))
	want := "x.toml:2: load.rate: must be > 0\nx.toml:4: load.users: open loop has no users\nx.toml:1: load: something else"
	if err == nil || err.Error() != want {
		t.Errorf("Locate = %q\nwant %q", err, want)
	}
	if s.Locate("load", nil) != nil {
		t.Error("Locate(nil) != nil")
	}
}

func TestSet(t *testing.T) {
	s, err := Parse("x.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"experiment.repetitions=2", `load.duration="1s"`, "deploy.transport=grpc", `experiment.factors."app.hops"=[2, 4]`} {
		if err := s.Set(a); err != nil {
			t.Fatalf("Set(%s): %v", a, err)
		}
	}
	if s.Experiment.Repetitions != 2 || s.Deploy.Transport != "grpc" || len(s.Overrides) != 4 {
		t.Errorf("after Set: %+v %+v %v", s.Experiment, s.Deploy, s.Overrides)
	}
	if v, _ := s.Lookup("load.duration"); v != "1s" {
		t.Errorf("load.duration = %v", v)
	}
	if f := s.Experiment.Factors[1]; f.Name != "app.hops" || len(f.Levels) != 2 || f.Levels[1] != int64(4) {
		t.Errorf("factor = %+v", f)
	}
	for _, tt := range []struct{ in, want string }{
		{"norate", "write key=value"},
		{"rate=5", "name a key inside a table"},
		{"deploy.transport.x=1", "deploy.transport is not a table"},
		{"experiment.repetitions=0", "experiment.repetitions: must be between 1 and 10000"},
		{"bogus.x=1", "unknown table"},
		{`experiment.factors."app=1`, "unterminated"},
	} {
		if err := s.Set(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Set(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	// A rejected assignment leaves the spec as it was.
	if s.Experiment.Repetitions != 2 || len(s.Overrides) != 4 {
		t.Errorf("failed Set changed the spec: %+v, %v", s.Experiment, s.Overrides)
	}
	if _, ok := s.Lookup("bogus"); ok {
		t.Error("failed Set left a table behind")
	}
}

func TestParseTable(t *testing.T) {
	var l loadCfg
	s, err := ParseTable("l.toml", []byte("rate = 5\n\nduration = \"soon\"\n"), "load")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Decode("load", &l); err == nil || !strings.HasPrefix(err.Error(), "l.toml:3: load") {
		t.Errorf("bare table error = %v", err)
	}
	if err := s.Locate("load", &KeyError{Key: "rate", Msg: "too low"}); err == nil || err.Error() != "l.toml:1: load.rate: too low" {
		t.Errorf("bare table Locate = %v", err)
	}
	if _, err := ParseTable("l.toml", []byte("rate = 5\nrate = 6\n"), "load"); err == nil || !strings.HasPrefix(err.Error(), "l.toml:2:") {
		t.Errorf("bare table syntax error = %v", err)
	}
	// A file with spec tables is a whole spec.
	s, err = ParseTable("s.toml", []byte("[app]\nname = \"chain\"\n[load]\nrate = 7\n"), "load")
	if err != nil || s.App.Name != "chain" {
		t.Fatalf("ParseTable(whole spec) = %v, %v", s, err)
	}
	if err := s.Decode("load", &l); err != nil || l.Rate != 7 {
		t.Errorf("rate = %v, %v", l.Rate, err)
	}
}

// A factor's name is a dotted key with --set's quoting, so a part holding
// a dot (a node label) is one part, and errors about its levels point at
// the factor.
func TestWithQuotedFactorKey(t *testing.T) {
	const head = "[app]\nname = \"chain\"\n[deploy]\ntransport = \"grpc\"\n[experiment.factors]\n"
	for _, tc := range []struct {
		name   string
		factor string // the factor's line, line 6
		level  any
		want   map[string]string // node selector of the run
		err    string
	}{
		{"quoted part", `'deploy.kube.node_selector."kubernetes.io/hostname"' = ["n1", "n2"]`, "n1",
			map[string]string{"kubernetes.io/hostname": "n1"}, ""},
		{"quoted plain part", `'deploy.kube."node_selector".zone' = ["a", "b"]`, "a",
			map[string]string{"zone": "a"}, ""},
		// A level's type is checked by the table's owner (the kube
		// deployer's keys_test.go).
		{"unterminated quote", `'deploy.kube.node_selector."kubernetes.io/hostname' = ["n1", "n2"]`, "n1", nil,
			`x.toml:6: experiment.factors."deploy.kube.node_selector.\"kubernetes.io/hostname": a factor must be a key of [app], [deploy] or [load]`},
		{"empty part", `"deploy.kube..zone" = ["n1", "n2"]`, "n1", nil,
			`x.toml:6: experiment.factors."deploy.kube..zone": a factor must be a key of [app], [deploy] or [load]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("x.toml", []byte(head+tc.factor+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Experiment.Factors) != 1 {
				t.Fatalf("factors = %+v", s.Experiment.Factors)
			}
			r, err := s.With(map[string]any{s.Experiment.Factors[0].Name: tc.level})
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error\n got %v\nwant prefix %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sel, _ := r.Lookup("deploy.kube.node_selector")
			got := map[string]string{}
			for k, v := range sel.(map[string]any) {
				got[k], _ = v.(string)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("node selector = %v, want %v", got, tc.want)
			}
			if v, ok := r.Lookup(s.Experiment.Factors[0].Name); !ok || v != tc.level {
				t.Errorf("Lookup(%s) = %v, %v; want %v", s.Experiment.Factors[0].Name, v, ok, tc.level)
			}
		})
	}
}

// TestFactorUnknownKey checks that a factor whose key names no key is
// reported at the factor's key, as the file writes it, with the key it
// likely meant in full, not at a key the file has nowhere with a
// suggestion out of its table; and that a key the file writes is still
// named as written.
func TestFactorUnknownKey(t *testing.T) {
	type request struct {
		Method string `toml:"method"`
	}
	type cfg struct {
		Rate    float64 `toml:"rate"`
		Request request `toml:"request"`
	}
	const head = "[load]\nrate = 10\n[experiment.factors]\n"
	for _, tc := range []struct {
		name, factors string
		sets          []string
		want          string
		later         string // a key a later check's error at is left out
	}{
		{"a factor's key", `"load.rat" = [1, 2]`, nil,
			`x.toml:4: experiment.factors."load.rat": unknown key (did you mean "load.rate"?)`, "load.rat"},
		{"a table a factor's key goes through", `"load.requst.method" = ["GET", "POST"]`, nil,
			`x.toml:4: experiment.factors."load.requst.method": unknown key load.requst (did you mean "load.request.method"?)`, "load.requst.method"},
		{"a key in a factor's table level", `"load.request" = [{methd = "GET"}, {methd = "POST"}]`, nil,
			`x.toml:4: experiment.factors."load.request": unknown key load.request.methd (did you mean "load.request.method"?)`, "load.request.method"},
		{"a linked factor's key", "fast = [{\"load.rat\" = 1}, {\"load.rat\" = 2}]", nil,
			`x.toml:4: experiment.factors.fast[0]."load.rat": unknown key (did you mean "load.rate"?)`, "load.rat"},
		{"nothing near", `"load.zzzzzz" = [1, 2]`, nil,
			`x.toml:4: experiment.factors."load.zzzzzz": unknown key (the keys of load: rate, request)`, "load.zzzzzz"},
		{"a factor set by a flag", `"load.rate" = [1, 2]`, []string{`experiment.factors."load.rat"=[1,2]`},
			`--set experiment.factors."load.rat"=[1,2]: experiment.factors."load.rat": unknown key (did you mean "load.rate"?)`, "load.rat"},
		{"the file's own key", "\"load.rate\" = [1, 2]\n[load.request]\nmethd = \"GET\"", nil,
			`x.toml:6: load.request.methd: unknown key (did you mean "method"?)`, "load.request.method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("x.toml", []byte(head+tc.factors+"\n"), tc.sets...)
			if err != nil {
				t.Fatal(err)
			}
			levels := map[string]any{}
			for _, f := range s.Experiment.Factors {
				levels[f.Name] = f.Levels[0]
			}
			r, err := s.With(levels)
			if err != nil {
				t.Fatal(err)
			}
			var c cfg
			var es Errors
			es.Add(r.Decode("load", &c))
			if got := es.Err(); got == nil || got.Error() != tc.want {
				t.Fatalf("error = %v\nwant    %s", got, tc.want)
			}
			// A later check's error at the key the factor set, or at a
			// key beside it that the spec leaves out (the one misspelt),
			// says nothing new: the check saw the default.
			es.AddLater(r.Errorf(tc.later, "must be something else"))
			if got := es.Err(); got.Error() != tc.want {
				t.Errorf("a later check's error was kept: %v", got)
			}
		})
	}
}

// TestDecodeKeepsTheRightKeys: Decode leaves out only the keys that are
// wrong, however deep, so that a check of the values after it sees every
// right one: a table of tables with one wrong key keeps its others, and
// its siblings; a list with one wrong element is left out whole.
func TestDecodeKeepsTheRightKeys(t *testing.T) {
	type comp struct {
		Protocol string   `toml:"protocol"`
		Calls    []string `toml:"calls"`
		Timeout  Duration `toml:"timeout"`
	}
	type cfg struct {
		Entry string           `toml:"entry"`
		Comps map[string]*comp `toml:"components"`
	}
	src := `[app]
name = "exec"
entry = "a"
[app.components.a]
protocol = "htp"
calls = ["b", 3]
timeout = "20"
[app.components.b]
protocol = "tcp"
protocl = "tcp"
`
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var c cfg
	err = s.Decode("app", &c)
	for _, want := range []string{
		"x.toml:6: app.components.a.calls[1]: must be a string, got 3",
		`x.toml:7: app.components.a.timeout: needs a unit, e.g. "20s"`,
		`x.toml:10: app.components.b.protocl: unknown key (did you mean "protocol"?)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode error %v lacks %q", err, want)
		}
	}
	if n := len(Unjoin(err)); n != 3 {
		t.Errorf("%d errors, want 3: %v", n, err)
	}
	a, b := c.Comps["a"], c.Comps["b"]
	if c.Entry != "a" || a == nil || b == nil {
		t.Fatalf("decoded %+v, want entry a and components a and b", c)
	}
	if a.Protocol != "htp" || a.Calls != nil || a.Timeout != 0 || b.Protocol != "tcp" {
		t.Errorf("decoded a = %+v, b = %+v; want a's protocol kept and its wrong calls and timeout left out, b's protocol kept", *a, *b)
	}
}
