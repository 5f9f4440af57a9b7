package spec

import (
	"reflect"
	"strings"
	"testing"
)

// TestSetValue checks that a value set directly lands in the tree as it
// would from Set, and that its recorded override, given to Set, yields
// the same spec: the record must be replayable.
func TestSetValue(t *testing.T) {
	tests := []struct {
		key   string
		value any
	}{
		{"load.rate", int64(50)},
		{"load.mode", `closed "quoted" 'too'`},
		{"load.raw_samples", true},
		{"load.request.body", `{"n": 3}`},
		{`load.request.headers."X.Dotted"`, "v"},
		{"load.stages", []any{map[string]any{"type": "ramp", "duration": "10s", "rate": int64(500)}}},
		{"load.request.headers", map[string]any{"A": "1", "b c": "{{user}}"}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			direct, err := Parse("x.toml", []byte(good))
			if err != nil {
				t.Fatal(err)
			}
			if err := direct.SetValue(tt.key, tt.value); err != nil {
				t.Fatalf("SetValue: %v", err)
			}
			if len(direct.Overrides) != 1 {
				t.Fatalf("Overrides = %q, want one", direct.Overrides)
			}
			replayed, err := Parse("x.toml", []byte(good))
			if err != nil {
				t.Fatal(err)
			}
			if err := replayed.Set(direct.Overrides[0]); err != nil {
				t.Fatalf("Set(%s): %v", direct.Overrides[0], err)
			}
			if !reflect.DeepEqual(direct.Tree(), replayed.Tree()) {
				t.Errorf("SetValue gave\n%v\nits record %s replayed gave\n%v", direct.Tree(), direct.Overrides[0], replayed.Tree())
			}
		})
	}
}

func TestSetValueErrors(t *testing.T) {
	s, err := Parse("x.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key   string
		value any
		want  string
	}{
		{"load.rate.x", int64(1), "load.rate is not a table"},
		{"rate", int64(1), "name a key inside a table"},
		{"experiment.repetitions", int64(0), "must be between 1 and 10000"},
	} {
		if err := s.SetValue(tt.key, tt.value); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SetValue(%s, %v) = %v, want %q", tt.key, tt.value, err, tt.want)
		}
	}
	if len(s.Overrides) != 0 || s.Experiment.Repetitions != 3 {
		t.Errorf("failed SetValue changed the spec: %v, %+v", s.Overrides, s.Experiment)
	}
}

func TestParseValue(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want any
	}{
		{"3", int64(3)},
		{"2.5", 2.5},
		{"true", true},
		{`"1s"`, "1s"},
		{"closed", "closed"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
		{`["a", "b"]`, []any{"a", "b"}},
	} {
		if got := ParseValue(tt.raw); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseValue(%s) = %#v, want %#v", tt.raw, got, tt.want)
		}
	}
}

func TestFieldType(t *testing.T) {
	type req struct {
		Method  string            `toml:"method"`
		Headers map[string]string `toml:"headers"`
	}
	type cfg struct {
		Rate     float64  `toml:"rate"`
		Duration Duration `toml:"duration"`
		Steps    []req    `toml:"steps"`
		Request  *req     `toml:"request"`
	}
	for _, tt := range []struct {
		key  string
		want reflect.Type
	}{
		{"rate", reflect.TypeFor[float64]()},
		{"duration", reflect.TypeFor[Duration]()},
		{"request.method", reflect.TypeFor[string]()},
		{"request.headers", reflect.TypeFor[map[string]string]()},
		{"steps.method", reflect.TypeFor[string]()},
		{"request", reflect.TypeFor[*req]()},
		{"rte", nil},
		{"rate.x", nil},
	} {
		got, ok := FieldType(&cfg{}, tt.key)
		if got != tt.want || ok != (tt.want != nil) {
			t.Errorf("FieldType(%s) = %v, %v; want %v", tt.key, got, ok, tt.want)
		}
	}
}

// TestSetOfAFactorRefused: a --set of a factor's key, or of a table that
// holds it, would be overwritten by every design point, so it is refused,
// naming the flag and the factor's line; setting the levels is not.
func TestSetOfAFactorRefused(t *testing.T) {
	const src = `[app]
name = "chain"
[load]
rate = 10
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
"deploy.resources.hop1.cpu" = [0.5, 1]
`
	for _, tc := range []struct {
		set  string
		want string // "" for no error
	}{
		{"deploy.transport=http", `--set deploy.transport=http: deploy.transport: a factor of this experiment (experiment.factors."deploy.transport" (line 6))`},
		{"deploy.resources.hop1={cpu=2}", `a factor of this experiment (experiment.factors."deploy.resources.hop1.cpu" (line 7))`},
		{"deploy.resources.hop1.memory=\"64MiB\"", ""},
		{`experiment.factors."deploy.transport"=["grpc","netrpc"]`, ""},
		{"deploy.placement=split", ""},
	} {
		s, err := Parse("x.toml", []byte(src), tc.set)
		if err == nil {
			err = s.CheckFactorsNotSet()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--set %s: %v", tc.set, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("--set %s: got %v, want an error containing %q", tc.set, err, tc.want)
		}
	}
}
