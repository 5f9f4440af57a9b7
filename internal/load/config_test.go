package load

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func TestConfigValidate(t *testing.T) {
	ok := func(c Config) Config { return c }
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; empty means valid
	}{
		{"open minimal", ok(Config{Rate: 10}), ""},
		{"closed minimal", Config{Mode: "closed", Users: 2}, ""},
		{"negative rate", Config{Rate: -5}, "load.rate: must be > 0, got -5"},
		{"zero rate open", Config{}, "load.rate: must be > 0, got 0"},
		{"bad mode", Config{Mode: "half", Rate: 1}, `load.mode: must be "open" or "closed", got "half"`},
		{"bad protocol", Config{Rate: 1, Protocol: "ftp"}, "load.protocol"},
		{"bad arrival", Config{Rate: 1, Arrival: "burst"}, "load.arrival"},
		{"negative duration", Config{Rate: 1, Duration: -1}, "load.duration: must be >= 0"},
		{"negative warmup", Config{Rate: 1, Warmup: -1}, "load.warmup"},
		{"users in open", Config{Rate: 1, Users: 3}, "load.users: applies to mode \"closed\""},
		{"rate in closed", Config{Mode: "closed", Users: 1, Rate: 3}, "load.rate: applies to mode \"open\""},
		{"zero users", Config{Mode: "closed"}, "load.users: must be > 0"},
		{"think both", Config{Mode: "closed", Users: 1, ThinkTime: 1, ThinkMax: 2}, "load.think_time"},
		{"think max < min", Config{Mode: "closed", Users: 1, ThinkMin: 5, ThinkMax: 2}, "load.think_max"},
		{"bad stage type", Config{Stages: []Stage{{Type: "jump", Duration: 1, Rate: 1}}}, `load.stages[0].type: must be "ramp" or "step", got "jump"`},
		{"stage no duration", Config{Stages: []Stage{{Type: "ramp", Rate: 1}}}, "load.stages[0].duration"},
		{"stages replace rate", Config{Stages: []Stage{{Type: "ramp", Duration: 1, Rate: 5}}}, ""},
		{"bad target", Config{Rate: 1, Target: "ftp://x"}, "load.target"},
		{"bad path", Config{Rate: 1, Request: &Request{Path: "x"}}, "load.request.path: must start with /"},
		{"bad status", Config{Rate: 1, Request: &Request{ExpectStatus: 42}}, "load.request.expect_status"},
		{"grpc method", Config{Rate: 1, Protocol: "grpc", Request: &Request{Method: "Echo"}}, "load.request.method"},
		{"grpc ok", Config{Rate: 1, Protocol: "grpc", Target: "127.0.0.1:9", Request: &Request{Method: "svclab.echo.Echo/Echo", Body: "{}"}}, ""},
		{"bad extract", Config{Rate: 1, Request: &Request{Extract: map[string]string{"id": "xml:a"}}}, "load.request.extract.id"},
		{"flow unknown var", Config{Rate: 1, Flow: &Flow{Steps: []Request{{Path: "/a/{{id}}"}}}}, "load.flow.steps[0].path: uses {{id}}"},
		{"flow var ok", Config{Rate: 1, Flow: &Flow{Steps: []Request{
			{Path: "/login", Extract: map[string]string{"id": "json:id"}}, {Path: "/a/{{id}}"}}}}, ""},
		{"flow dup names", Config{Rate: 1, Flow: &Flow{Steps: []Request{{Path: "/a"}, {Path: "/a"}}}}, "load.flow.steps[1].name"},
		{"weighted needs weight", Config{Rate: 1, Flow: &Flow{Order: "weighted", Steps: []Request{{Path: "/a"}}}}, "load.flow.steps[0].weight"},
		{"request and flow", Config{Rate: 1, Request: &Request{}, Flow: &Flow{Steps: []Request{{}}}}, "load.flow: set either"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestConfigTOML(t *testing.T) {
	const doc = `
mode = "closed"
users = 4
duration = "30s"
think_min = "10ms"
think_max = "20ms"
[[stages]]
type = "ramp"
duration = "5s"
users = 8
[flow]
name = "checkout"
[[flow.steps]]
method = "POST"
path = "/login"
extract = { token = "json:token" }
[[flow.steps]]
path = "/cart"
headers = { Authorization = "Bearer {{token}}" }
expect_status = 200
`
	var c Config
	dec := toml.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Duration.D().Seconds() != 30 || c.ThinkMax.D().Milliseconds() != 20 || len(c.Flow.Steps) != 2 {
		t.Fatalf("decoded %+v", c)
	}
	out, err := toml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `duration = '30s'`) {
		t.Fatalf("durations must round-trip as strings:\n%s", out)
	}

	var bad Config
	dec = toml.NewDecoder(strings.NewReader("rate = 5\nrat = 3\n"))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&bad); err == nil {
		t.Fatal("unknown key accepted")
	}
	dec = toml.NewDecoder(strings.NewReader(`duration = "soon"`))
	if err := dec.Decode(&bad); err == nil || !strings.Contains(err.Error(), "30s") {
		t.Fatalf("bad duration error = %v", err)
	}
}

func decodeConfig(t *testing.T, doc string) Config {
	t.Helper()
	var c Config
	dec := toml.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckLoopback(t *testing.T) {
	for _, tt := range []struct {
		target string
		ok     bool
	}{
		{"http://127.0.0.1:8080/x", true},
		{"http://localhost:9/", true},
		{"http://[::1]:80", true},
		{"127.0.0.2:9000", true},
		{"http://10.1.2.3/", false},
		{"192.168.0.1:80", false},
		{"http://8.8.8.8/", false},
	} {
		if err := CheckLoopback(tt.target); (err == nil) != tt.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", tt.target, err, tt.ok)
		}
	}
}
