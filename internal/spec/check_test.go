package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type embeddedCfg struct {
	Extra string `toml:"extra"`
}

// richCfg has a field of every kind the checker tells apart.
type richCfg struct {
	Rate   float64  `toml:"rate"`
	N      int8     `toml:"n"`
	U      uint16   `toml:"u"`
	On     bool     `toml:"on"`
	Name   string   `toml:"name"`
	Wait   Duration `toml:"wait"`
	Stages []struct {
		Duration Duration `toml:"duration"`
		Rate     float64  `toml:"rate"`
	} `toml:"stages"`
	Request *struct {
		Path    string            `toml:"path"`
		Headers map[string]string `toml:"headers"`
	} `toml:"request"`
	Groups map[string][][]string `toml:"groups"`
	Any    any                   `toml:"any"`
	embeddedCfg
}

func TestDecodeSpeaksSpec(t *testing.T) {
	tests := []struct {
		name string
		src  string // the [load] table's body, from line 2
		want string // the whole error, or "" for none
	}{
		{"string for number", `rate = "fast"`, `x.toml:2: load.rate: must be a number, got "fast"`},
		{"nan", `rate = nan`, `x.toml:2: load.rate: must be a finite number, got nan`},
		{"negative infinity", `rate = -inf`, `x.toml:2: load.rate: must be a finite number, got -inf`},
		{"integer for float", `rate = 3`, ``},
		{"int8 range", `n = 300`, `x.toml:2: load.n: must be between -128 and 127, got 300`},
		{"uint negative", `u = -1`, `x.toml:2: load.u: must be between 0 and 65535, got -1`},
		{"fraction for integer", `n = 1.5`, `x.toml:2: load.n: must be a whole number, got 1.5`},
		{"bool", `on = "yes"`, `x.toml:2: load.on: must be true or false, got "yes"`},
		{"number for string", `name = 5`, `x.toml:2: load.name: must be a string, got 5`},
		{"date for string", `name = 1979-05-27`, `x.toml:2: load.name: must be a string, got 1979-05-27`},
		{"duration without unit", `wait = 5`, `x.toml:2: load.wait: needs a unit, e.g. "5s"`},
		{"fractional duration without unit", `wait = 1.5`, `x.toml:2: load.wait: needs a unit, e.g. "1.5s"`},
		{"zero duration", `wait = 0`, ``},
		{"duration string without unit", `wait = "5"`, `x.toml:2: load.wait: needs a unit, e.g. "5s"`},
		{"duration too long", `wait = "9999999999h"`, `x.toml:2: load.wait: too long: a duration is at most 2562047h47m16.854775807s, got "9999999999h"`},
		{"duration nonsense", `wait = "soon"`, `x.toml:2: load.wait: not a duration (write e.g. "30s" or "1m30s"): "soon"`},
		{"table for duration", `wait = {s = 1}`, `x.toml:2: load.wait: must be a string, got a table`},
		{"scalar for list", `stages = 5`, `x.toml:2: load.stages: must be a list, got 5`},
		{"scalar for table", `request = "/"`, `x.toml:2: load.request: must be a table, got "/"`},
		{"second array table", "[[load.stages]]\nduration = \"1s\"\n[[load.stages]]\nrate = 1\nduration = 2",
			`x.toml:6: load.stages[1].duration: needs a unit, e.g. "2s"`},
		{"inline table in inline table", `request = {path = "/", headers = {a = 1}}`, `x.toml:2: load.request.headers.a: must be a string, got 1`},
		{"sub-table", "[load.request]\n\npath = 5", `x.toml:4: load.request.path: must be a string, got 5`},
		{"nested list", `groups = {p = [["a"], ["b", 2]]}`, `x.toml:2: load.groups.p[1][1]: must be a string, got 2`},
		{"element of a multi-line list", "groups.p = [\n  [\"a\"],\n  [3],\n]", `x.toml:4: load.groups.p[1][0]: must be a string, got 3`},
		{"embedded field", `extra = 1`, `x.toml:2: load.extra: must be a string, got 1`},
		{"any takes anything", `any = nan`, ``},
		{"key in the wrong case", `Rate = 1`, `x.toml:2: load.Rate: unknown key (did you mean "rate"?)`},
		{"unknown key in a sub-table", "[load.request]\npth = \"/\"", `x.toml:3: load.request.pth: unknown key (did you mean "path"?)`},
		{"table under an array element", "[[load.stages]]\n[[load.stages]]\n[load.stages.x]\ny = 1", `x.toml:4: load.stages[1].x: unknown key (known keys: duration, rate)`},
		{"several, in file order", "on = 1\nrate = \"x\"", "x.toml:2: load.on: must be true or false, got 1\nx.toml:3: load.rate: must be a number, got \"x\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.toml", []byte("[load]\n"+tt.src+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			var c richCfg
			err = s.Decode("load", &c)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Decode error\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDecodeBoundsErrorCount(t *testing.T) {
	var b strings.Builder
	b.WriteString("[load]\nstages = [\n")
	for i := 0; i < MaxErrors+30; i++ {
		b.WriteString("  {rate = \"x\"},\n")
	}
	b.WriteString("]\n")
	s, err := Parse("x.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var c richCfg
	err = s.Decode("load", &c)
	parts := Unjoin(err)
	if len(parts) != MaxErrors+1 || !strings.Contains(parts[MaxErrors].Error(), "and 30 more errors") {
		t.Fatalf("got %d errors, last %v; want %d and a count of the rest", len(parts), parts[len(parts)-1], MaxErrors+1)
	}
	if !strings.HasPrefix(parts[1].Error(), "x.toml:4: load.stages[1].rate:") {
		t.Errorf("second error %q, want it at the second element's line", parts[1])
	}
}

func TestSetErrorsNameTheFlag(t *testing.T) {
	src := "[app]\nname = \"chain\"\n[deploy]\ntransport = \"grpc\"\n[load]\nrate = 5\n[experiment.factors]\n\"load.wait\" = [\"1s\", \"2s\"]\n"
	tests := []struct {
		set, table, want string
	}{
		{"load.rate=nan", "load", "--set load.rate=nan: load.rate: must be a finite number, got nan"},
		{"load.rate=fast", "load", `--set load.rate=fast: load.rate: must be a number, got "fast"`},
		{`load.request={path = 5}`, "load", "--set load.request={path = 5}: load.request.path: must be a string, got 5"},
		{"deploy.network=udp", "", `--set deploy.network=udp: deploy.network: must be "tcp" or "unix", got "udp"`},
		{"deploy.start_timeout=5", "", `--set deploy.start_timeout=5: deploy.start_timeout: needs a unit, e.g. "5s"`},
		{"experiment.repetitions=0", "", "--set experiment.repetitions=0: experiment.repetitions: must be between 1 and 10000, got 0"},
		{"lod.rate=1", "", `--set lod.rate=1: lod: unknown table (a spec has only [app], [deploy], [load], [experiment]) (did you mean "load"?)`},
		{"deploy.transport.x=1", "", "--set deploy.transport.x=1: deploy.transport.x: deploy.transport is not a table"},
		{"load.rate=" + strings.Repeat("9", 200) + "x", "load", `--set load.rate=` + strings.Repeat("9", 80) + `… (201 characters): load.rate: must be a number, got "` + strings.Repeat("9", 80) + `"… (201 characters)`},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			s, err := Parse("x.toml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Set(tt.set)
			if tt.table != "" {
				if err != nil {
					t.Fatalf("Set: %v", err)
				}
				err = s.Decode(tt.table, &richCfg{})
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error\n got %v\nwant %q", err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) || se.Line != 0 || !strings.HasPrefix(se.Flag, "--set ") {
				t.Errorf("error %#v does not name the flag alone", se)
			}
		})
	}

	// A key the file writes but a flag replaced is the flag's; a factor
	// level set later wins over both.
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"load.rate=fast", `load.wait="x"`} {
		if err := s.Set(a); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.With(map[string]any{"load.wait": "soon"})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Decode("load", &richCfg{})
	want := "--set load.rate=fast: load.rate: must be a number, got \"fast\"\nx.toml:8: load.wait: not a duration"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error\n got %v\nwant %q", err, want)
	}
}

func TestFactorSetByFlagPointsAtFlag(t *testing.T) {
	s, err := Parse("x.toml", []byte("[load]\nrate = 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(`experiment.factors."load.rate"=[1, "x"]`); err != nil {
		t.Fatal(err)
	}
	r, err := s.With(map[string]any{"load.rate": "x"})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Decode("load", &richCfg{})
	want := `--set experiment.factors."load.rate"=[1, "x"]: load.rate: must be a number, got "x"`
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %q", err, want)
	}
}

func TestTextAsTyped(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"byte-order mark", "\uFEFF[deploy]\ntransport = \"http\"\n", ""},
		{"byte-order mark and an error", "\uFEFF[deploy]\nnetwork = \"udp\"\n", `x.toml:2: deploy.network: must be "tcp" or "unix", got "udp" (leave the key out for the transport's own choice)`},
		{"non-ASCII bare key", "[app]\nname = \"chain\"\nnäme = 1\n", `x.toml:3: expected '=' after key (a bare key is ASCII letters, digits, '_' and '-'; quote any other: "näme")`},
		{"non-ASCII first character", "[app]\né = 1\n", `x.toml:2: invalid character at start of key: U+00E9 'é' (a bare key is ASCII letters, digits, '_' and '-'; quote any other: "é")`},
		{"quoted non-ASCII key", "[deploy]\n\"trånsport\" = \"grpc\"\n", `x.toml:2: deploy.trånsport: unknown key (did you mean "transport"?)`},
		{"non-ASCII value", "[experiment]\norder = \"zufällig\"\n", `x.toml:2: experiment.order: must be "random", "sequential", "interleaved" or "blocked", got "zufällig"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tt.src))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	// ParseTable drops the mark too, and keeps the file's lines.
	s, err := ParseTable("l.toml", []byte("\uFEFFrate = 5\nwait = 3\n"), "load")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Decode("load", &richCfg{}); err == nil || err.Error() != `l.toml:2: load.wait: needs a unit, e.g. "3s"` {
		t.Errorf("ParseTable error = %v", err)
	}
}

func TestLongValuesAreCut(t *testing.T) {
	long := strings.Repeat("é", 10000)
	s, err := Parse("x.toml", []byte("[experiment]\norder = \""+long+"\"\n"))
	if err == nil {
		t.Fatal("Parse accepted a 10000-character order")
	}
	_ = s
	want := `x.toml:2: experiment.order: must be "random", "sequential", "interleaved" or "blocked", got "` + strings.Repeat("é", EchoLimit) + `"… (10000 characters)`
	if err.Error() != want {
		t.Errorf("error\n got %.300q\nwant %.300q", err, want)
	}
	// An owner's message is cut wherever it echoes the value.
	s, err = Parse("x.toml", []byte("[load]\nrate = 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Locate("load", &KeyError{Key: "rate", Msg: fmt.Sprintf("%q is bad and %q is fine", long, "ok")})
	if n := len([]rune(err.Error())); n > 200 || !strings.Contains(err.Error(), `"… (10000 characters) is bad and "ok" is fine`) {
		t.Errorf("owner's message not cut (%d characters): %.300q", n, err)
	}
	// So is a long key.
	s, err = Parse("x.toml", []byte("[load]\n"+strings.Repeat("k", 500)+" = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Decode("load", &richCfg{})
	if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "… (505 characters): unknown key") {
		t.Errorf("long key not cut: %.300q", err)
	}
}

func TestEcho(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{"fast", `"fast"`},
		{int64(5), "5"},
		{2.5, "2.5"},
		{map[string]any{}, "a table"},
		{[]any{1}, "a list"},
		{true, "true"},
		{strings.Repeat("x", EchoLimit), `"` + strings.Repeat("x", EchoLimit) + `"`},
		{strings.Repeat("x", EchoLimit+1), `"` + strings.Repeat("x", EchoLimit) + `"… (81 characters)`},
	}
	for _, tt := range tests {
		if got := Echo(tt.v); got != tt.want {
			t.Errorf("Echo(%v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestEmptyIsNotDefault(t *testing.T) {
	tests := []struct{ key, src, want string }{
		{"deploy.network", "[deploy]\nnetwork = \"\"\n", `x.toml:2: deploy.network: must be "tcp" or "unix", got ""`},
		{"experiment.design", "[experiment]\ndesign = \"\"\n", `x.toml:2: experiment.design: must be "full" or "fractional", got ""`},
		{"experiment.order", "[experiment]\norder = \"\"\n", `x.toml:2: experiment.order: must be "random", "sequential", "interleaved" or "blocked", got ""`},
		{"experiment.response", "[experiment]\nresponse = \"\"\n", `x.toml:2: experiment.response: unknown metric ""`},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tt.src))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n got %v\nwant %q", err, tt.want)
			}
		})
	}
	// Deployer, transport and placement stay empty for deploy.Resolve and
	// runtime.Resolve, which know the valid names; left out, they take
	// their defaults.
	s, err := Parse("x.toml", []byte("[deploy]\ndeployer = \"\"\ntransport = \"\"\nplacement = \"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Deploy.Deployer != "" || s.Deploy.Transport != "" || s.Deploy.Placement != "" {
		t.Errorf("explicit empty became %+v", s.Deploy)
	}
	s, err = Parse("x.toml", []byte("[deploy]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Deploy.Transport != DefaultTransport || s.Deploy.Placement != DefaultPlacement || s.Deploy.Deployer != DefaultDeployer {
		t.Errorf("defaults not applied: %+v", s.Deploy)
	}
}

func TestMaxRuns(t *testing.T) {
	factors := func(n, levels int) string {
		var b strings.Builder
		b.WriteString("[experiment.factors]\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "\"app.f%d\" = [", i)
			for l := 0; l < levels; l++ {
				fmt.Fprintf(&b, "%d,", l)
			}
			b.WriteString("]\n")
		}
		return b.String()
	}
	tests := []struct {
		name, src string
		want      string // "" when the design fits
	}{
		{"default cap fits", "[experiment]\nrepetitions = 10\n" + factors(3, 10), ""},
		{"default cap", "[experiment]\n" + factors(20, 2),
			"x.toml:2: experiment.factors: 1048576 runs (1048576 design points × 1 repetition) are more than experiment.max_runs = 10000; use a fractional design"},
		{"factors named", "[experiment]\n" + factors(14, 2), `design points: levels of app.f0 (2) × app.f1 (2)`},
		{"repetitions count", "[experiment]\nrepetitions = 3\n" + factors(2, 60), "x.toml:3: experiment.factors: 10800 runs (3600 design points × 3 repetitions)"},
		{"no overflow", "[experiment]\nmax_runs = 1000000\n" + factors(26, 10), "100000000000000000000000000 runs"},
		{"raised cap", "[experiment]\nmax_runs = 20000\n" + factors(14, 2), ""},
		{"lowered cap", "[experiment]\nmax_runs = 3\n" + factors(2, 2), "4 runs (4 design points × 1 repetition) are more than experiment.max_runs = 3"},
		{"repetitions alone", "[experiment]\nmax_runs = 3\nrepetitions = 4\n", "x.toml:3: experiment.repetitions: 4 runs"},
		{"fractional", "[experiment]\ndesign = \"fractional\"\n" + factors(16, 2) + "[experiment.generators]\nP = \"ABC\"\nO = \"ABD\"\n",
			"16384 runs (16384 design points × 1 repetition) are more than experiment.max_runs = 10000; use a fractional design (design = \"fractional\" with [experiment.generators]), fewer factors, levels or repetitions, or raise experiment.max_runs; design points: 2^(16-2)"},
		{"cap range", "[experiment]\nmax_runs = 0\n", "x.toml:2: experiment.max_runs: must be between 1 and 1000000, got 0"},
		{"cap range high", "[experiment]\nmax_runs = 1000001\n", "must be between 1 and 1000000"},
		{"generators", "[experiment]\ndesign = \"fractional\"\n" + factors(14, 2) + "[experiment.generators]\nC=\"AB\"\nD=\"AB\"\nE=\"AB\"\nF=\"AB\"\nG=\"AB\"\nH=\"AB\"\nI=\"AB\"\nJ=\"AB\"\nK=\"AB\"\nL=\"AB\"\nM=\"AB\"\nN=\"AB\"\n",
			"experiment.generators: at most 11 generators, got 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			s, err := Parse("x.toml", []byte(tt.src))
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Parse took %v: the count must not expand the design", d)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.want == "" && s.Experiment.MaxRuns < 1:
				t.Errorf("MaxRuns = %d", s.Experiment.MaxRuns)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error\n got %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestPositions(t *testing.T) {
	src := `[load]
stages = [
  {rate = 1},

  {rate = 2},
]
[[load.flow.steps]]
path = "/a"
[[load.flow.steps]]
path = "/b"
[load.flow.steps.headers]
x = "1"
[[load.flow.steps.extra]]
y = 1
`
	idx := indexKeys([]byte(src))
	for key, want := range map[string]int{
		"load.stages[0]":                3,
		"load.stages[1]":                5,
		"load.stages[1].rate":           5,
		"load.flow.steps[0].path":       8,
		"load.flow.steps[1]":            9,
		"load.flow.steps[1].headers.x":  12,
		"load.flow.steps[1].extra[0].y": 14,
		"load.flow.steps[1].headers":    11,
		"load.flow.steps[1].extra[0]":   13,
		"load.flow.steps[1].extra":      13,
		"load.flow.steps":               7,
		"load.stages":                   2,
	} {
		if got := idx.lines[key]; got != want {
			t.Errorf("line of %s = %d, want %d", key, got, want)
		}
	}
	if _, ok := idx.lines["load.flow.steps.headers"]; ok {
		t.Error("a header under an array of tables was indexed outside its element")
	}
}

// A string key given a number or a boolean by --set says how to quote it,
// as the flag reads `1` as TOML; written in the file, the value needs no
// shell advice.
func TestSetStringKeyHint(t *testing.T) {
	for _, tc := range []struct {
		src  string
		set  string
		want string
	}{
		{"", "deploy.languages.hop1=1",
			`--set deploy.languages.hop1=1: deploy.languages.hop1: must be a string, got 1; quote it: --set 'deploy.languages.hop1="1"'`},
		{"", `deploy.languages."a.b"=2.5`,
			`--set deploy.languages."a.b"=2.5: deploy.languages."a.b": must be a string, got 2.5; quote it: --set 'deploy.languages."a.b"="2.5"'`},
		{"", "deploy.languages={hop1=1}",
			`--set deploy.languages={hop1=1}: deploy.languages.hop1: must be a string, got 1; quote it: --set 'deploy.languages.hop1="1"'`},
		{"", "deploy.sidecar=true",
			`--set deploy.sidecar=true: deploy.sidecar: must be a string, got true; quote it: --set 'deploy.sidecar="true"'`},
		{"", "deploy.sidecar=[1]",
			`--set deploy.sidecar=[1]: deploy.sidecar: must be a string, got a list`},
		{"[deploy.languages]\nhop1 = 1\n", "",
			`x.toml:2: deploy.languages.hop1: must be a string, got 1`},
	} {
		t.Run(tc.set+tc.src, func(t *testing.T) {
			var sets []string
			if tc.set != "" {
				sets = []string{tc.set}
			}
			_, err := Parse("x.toml", []byte(tc.src), sets...)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}
