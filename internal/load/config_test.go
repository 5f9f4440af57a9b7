package load

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/svclab/svclab/internal/spec"
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
		{"warmup_rate ok", Config{Rate: 3, Warmup: Duration(time.Second), WarmupRate: 500}, ""},
		{"negative warmup_rate", Config{Rate: 3, Warmup: Duration(time.Second), WarmupRate: -1}, "load.warmup_rate: must be >= 0, got -1"},
		{"warmup_rate without warmup", Config{Rate: 3, WarmupRate: 500}, "load.warmup_rate: needs a warmup duration"},
		{"warmup_rate in closed", Config{Mode: "closed", Users: 1, Warmup: Duration(time.Second), WarmupRate: 5}, `load.warmup_rate: applies to mode "open" only`},
		{"warmup_rate too high", Config{Rate: 3, Warmup: Duration(time.Second), WarmupRate: 2 * MaxRate}, "load.warmup_rate: must be at most 100000 arrivals per second"},
		{"warmup_calls ok", Config{Rate: 3, Warmup: Duration(time.Minute), WarmupCalls: 2000, WarmupUsers: 4}, ""},
		{"warmup_calls closed ok", Config{Mode: "closed", Users: 1, Warmup: Duration(time.Minute), WarmupCalls: 2000}, ""},
		{"negative warmup_calls", Config{Rate: 3, Warmup: Duration(time.Minute), WarmupCalls: -1}, "load.warmup_calls: must be >= 0, got -1"},
		{"warmup_calls without warmup", Config{Rate: 3, WarmupCalls: 2000}, "load.warmup_calls: needs load.warmup as its time bound"},
		{"warmup_calls and warmup_rate", Config{Rate: 3, Warmup: Duration(time.Minute), WarmupRate: 500, WarmupCalls: 2000}, "load.warmup_calls: set either warmup_calls"},
		{"warmup_calls over generators", Config{Rate: 3, Warmup: Duration(time.Minute), WarmupCalls: 2000, Generators: ptr(2)}, "load.warmup_calls: runs in one generator only"},
		{"warmup_users alone", Config{Rate: 3, Warmup: Duration(time.Minute), WarmupUsers: 4}, "load.warmup_users: applies to a warm-up by calls only"},
		{"negative warmup_users", Config{Rate: 3, Warmup: Duration(time.Minute), WarmupCalls: 5, WarmupUsers: -1}, "load.warmup_users: must be >= 0, got -1"},
		{"warmup_users too many", Config{Rate: 3, Warmup: Duration(time.Minute), WarmupCalls: 5, WarmupUsers: MaxUsers + 1}, "load.warmup_users: must be at most 10000"},
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

		// Numbers that mean nothing, and numbers past the generator's limits.
		{"NaN rate", Config{Rate: math.NaN()}, "load.rate: must be a finite number, got nan"},
		{"Inf rate", Config{Rate: math.Inf(1)}, "load.rate: must be a finite number, got inf"},
		{"rate past the pacer", Config{Rate: 1e12}, "load.rate: must be at most 100000 arrivals per second, what one generator can pace"},
		{"rate at the limit", Config{Rate: MaxRate}, ""},
		{"NaN stage rate", Config{Stages: []Stage{{Type: "ramp", Duration: 1, Rate: math.NaN()}}}, "load.stages[0].rate: must be a finite number, got nan"},
		{"stage rate past the pacer", Config{Stages: []Stage{{Type: "ramp", Duration: 1, Rate: 2e5}}}, "load.stages[0].rate: must be at most 100000"},
		{"too many users", Config{Mode: "closed", Users: MaxUsers + 1}, "load.users: must be at most 10000, got 10001"},
		{"too many stage users", Config{Mode: "closed", Stages: []Stage{{Type: "step", Duration: 1, Users: 1e6}}}, "load.stages[0].users: must be at most 10000, got 1000000"},
		{"too many connections", Config{Rate: 1, Connections: 1e6}, "load.connections: must be at most 10000, got 1000000"},
		{"max_inflight past its limit", Config{Rate: 1, MaxInflight: 1e9}, "load.max_inflight: must be at most 1000000, got 1000000000"},
		{"NaN spawn rate", Config{Mode: "closed", Users: 1, SpawnRate: math.NaN()}, "load.spawn_rate: must be a finite number"},
		{"negative spawn rate", Config{Mode: "closed", Users: 1, SpawnRate: -1}, "load.spawn_rate: must be >= 0, got -1"},
		{"NaN weight", Config{Rate: 1, Flow: &Flow{Order: "weighted", Steps: []Request{{Path: "/a", Weight: math.NaN()}}}}, "load.flow.steps[0].weight: must be a finite number"},
		{"stages overflow", Config{Rate: 1, Stages: []Stage{
			{Type: "step", Duration: Duration(math.MaxInt64 / 2), Rate: 1},
			{Type: "step", Duration: Duration(math.MaxInt64 / 2), Rate: 1},
			{Type: "step", Duration: Duration(math.MaxInt64 / 2), Rate: 1}}}, "load.stages: take more than 2562047h47m16.854775807s together"},
		{"warm-up and window overflow", Config{Rate: 1, Warmup: Duration(math.MaxInt64 / 2), Duration: Duration(math.MaxInt64/2 + 2)}, "load.warmup: 1281023h53m38.427387903s of warm-up and"},
		{"bad order", Config{Rate: 1, Flow: &Flow{Order: "random", Steps: []Request{{}}}}, `load.flow.order: must be "sequence" or "weighted", got "random"`},

		// Targets checked as their protocol reads them.
		{"port out of range", Config{Rate: 1, Target: "http://127.0.0.1:99999/"}, `load.target: port "99999" is out of range 1-65535`},
		{"port 0", Config{Rate: 1, Target: "http://127.0.0.1:0/"}, `load.target: port "0" is out of range`},
		{"space in URL", Config{Rate: 1, Target: "http://127.0.0.1:80/a b"}, "load.target: \"http://127.0.0.1:80/a b\" has a space or control character at position 22"},
		{"grpc at an http URL", Config{Rate: 1, Protocol: "grpc", Target: "http://127.0.0.1:9000", Request: &Request{Method: "a.B/C"}},
			`load.target: protocol "grpc" wants host:port or grpc://host:port, got a http:// URL`},
		{"grpc URL ok", Config{Rate: 1, Protocol: "grpc", Target: "grpc://127.0.0.1:9000", Request: &Request{Method: "a.B/C"}}, ""},
		{"grpc without port", Config{Rate: 1, Protocol: "grpc", Target: "127.0.0.1", Request: &Request{Method: "a.B/C"}}, "load.target: want host:port"},
		{"grpc with a path", Config{Rate: 1, Protocol: "grpc", Target: "grpc://127.0.0.1:9/a.B/C", Request: &Request{Method: "a.B/C"}}, "load.target: a gRPC target is host:port only"},
		{"http at host:port", Config{Rate: 1, Target: "127.0.0.1:9000"}, `(for a gRPC server, use protocol "grpc")`},
		{"https", Config{Rate: 1, Target: "https://127.0.0.1/"}, "load.target: https is not supported"},
		{"grpc scheme with http", Config{Rate: 1, Target: "grpc://127.0.0.1:9"}, `load.target: a grpc:// target needs protocol "grpc"`},
		{"user info", Config{Rate: 1, Target: "http://u:p@127.0.0.1/"}, "load.target: \"http://u:p@127.0.0.1/\" has user info"},
		{"no host", Config{Rate: 1, Target: "http:///x"}, "has no host"},
		{"unix socket ok", Config{Rate: 1, Target: "unix:///run/app.sock"}, ""},
		{"grpc unix socket ok", Config{Rate: 1, Protocol: "grpc", Target: "unix:///run/app.sock", Request: &Request{Method: "a.B/C"}}, ""},
		{"unix socket as nginx writes it", Config{Rate: 1, Target: "unix:/run/app.sock"}, "load.target: a unix socket's target is unix:// and the socket's absolute path, e.g. unix:///run/app.sock, got \"unix:/run/app.sock\" (write unix:///run/app.sock)"},
		{"grpc unix socket as grpc-go writes it", Config{Rate: 1, Protocol: "grpc", Target: "unix:/run/app.sock", Request: &Request{Method: "a.B/C"}}, "(write unix:///run/app.sock)"},
		{"relative unix socket as grpc-go writes it", Config{Rate: 1, Target: "unix:app.sock"}, "load.target: a unix socket's target is unix:// and the socket's absolute path, e.g. unix:///run/app.sock, got \"unix:app.sock\""},
		{"relative unix socket", Config{Rate: 1, Target: "unix://app.sock"}, "load.target: a unix socket's target is unix:// and the socket's absolute path"},
		{"path with a space", Config{Rate: 1, Request: &Request{Path: "/a b"}}, "load.request.path: has a space or control character at position 3"},
		{"header with a line break", Config{Rate: 1, Request: &Request{Headers: map[string]string{"X": "a\r\nEvil: 1"}}}, "load.request.headers.X: must not contain a line break"},
		{"bad header name", Config{Rate: 1, Request: &Request{Headers: map[string]string{"X Y": "1"}}}, `load.request.headers: "X Y" is not a header name`},
		{"path for grpc", Config{Rate: 1, Protocol: "grpc", Request: &Request{Method: "a.B/C", Path: "/x"}}, "load.request.path: applies to HTTP only"},

		// Thresholds.
		{"thresholds ok", Config{Rate: 1, Target: "http://127.0.0.1:9/cart", Thresholds: &Thresholds{Limits: Limits{P99Ms: ptr(50.0), ErrorRate: ptr(0.0)},
			Operations: map[string]Limits{"GET /cart": {P50Ms: ptr(5.0)}}}}, ""},
		{"error rate past 1", Config{Rate: 1, Thresholds: &Thresholds{Limits: Limits{ErrorRate: ptr(2.0)}}}, "load.thresholds.error_rate: must be between 0 and 1 (a share of the requests), got 2"},
		{"NaN threshold", Config{Rate: 1, Thresholds: &Thresholds{Limits: Limits{P99Ms: ptr(math.NaN())}}}, "load.thresholds.p99_ms: must be a finite number, got nan"},
		{"negative threshold", Config{Rate: 1, Thresholds: &Thresholds{Limits: Limits{MinRPS: ptr(-1.0)}}}, "load.thresholds.min_rps: must be >= 0, got -1"},
		{"threshold of no operation", Config{Rate: 1, Target: "http://127.0.0.1:9/cart", Thresholds: &Thresholds{Operations: map[string]Limits{"GET /": {P50Ms: ptr(5.0)}}}},
			`load.thresholds.operations."GET /": no operation of this run is named "GET /" (they are "total" or "GET /cart")`},
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
		{"unix:///run/app.sock", true},
		{"http://8.8.8.8/", false},
	} {
		if err := CheckLoopback(tt.target); (err == nil) != tt.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", tt.target, err, tt.ok)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// decodeSpec reads text as a spec's [load] table (or the keys of one),
// decodes it strictly and validates it, as the runner and svclab load do:
// every error located at its file and line.
func decodeSpec(text string) (Config, error) {
	var c Config
	s, err := spec.ParseTable("load.toml", []byte(text), "load")
	if err != nil {
		return c, err
	}
	if err := Decode(s, &c); err != nil {
		return c, err
	}
	return c, s.Locate("load", c.Validate())
}

// TestConfigFromSpec: what a spec writes is refused where Go's zero
// values would pass: a key written empty is not its default, and numbers
// that mean nothing never reach Validate.
func TestConfigFromSpec(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{"rate = 1\nmode = \"\"", `load.toml:2: load.mode: must be "open" or "closed", got ""`},
		{"rate = 1\nprotocol = \"\"", `load.toml:2: load.protocol: must be "http", "h2c" or "grpc", got ""`},
		{"rate = 1\narrival = \"\"", `load.toml:2: load.arrival: must be "constant" or "poisson", got ""`},
		{"[load]\nrate = 1\n[load.flow]\norder = \"\"\n[[load.flow.steps]]\npath = \"/\"", `load.toml:4: load.flow.order: must be "sequence" or "weighted", got ""`},
		{"rate = nan", "load.toml:1: load.rate: must be a finite number, got nan"},
		{"rate = inf", "load.toml:1: load.rate: must be a finite number, got inf"},
		{"rate = -inf", "load.toml:1: load.rate: must be a finite number, got -inf"},
		{"rate = 1e12", "load.toml:1: load.rate: must be at most 100000 arrivals per second"},
		{"mode = \"closed\"\nusers = 1\nspawn_rate = nan", "load.toml:3: load.spawn_rate: must be a finite number, got nan"},
		{"[[load.stages]]\ntype = \"ramp\"\nduration = \"1s\"\nrate = inf", "load.toml:4: load.stages[0].rate: must be a finite number, got inf"},
		{"rate = 1\nwarmup = \"30s\"\nwarmup_calls = -5", "load.toml:3: load.warmup_calls: must be >= 0, got -5"},
		{"rate = 1\nwarmup_calls = 2000\nwarmup_users = 4", "load.toml:2: load.warmup_calls: needs load.warmup as its time bound"},
		{"rate = 1\nwarmup = \"30s\"\nwarmup_users = 4", "load.toml:3: load.warmup_users: applies to a warm-up by calls only"},
		{"rate = 1\nwarmup = \"30s\"\nwarmup_calls = 2000\nwarmup_users = 4", ""},
		{"rate = 1\nduration = 6", `load.toml:2: load.duration: needs a unit, e.g. "6s"`},
		// A zero written is not the default its Go zero stands for.
		{"rate = 1\nduration = \"0s\"", `load.toml:2: load.duration: must be > 0, got "0s" (leave the key out for the default, 10s`},
		{"rate = 1\nduration = 0", `load.toml:2: load.duration: must be > 0, got 0`},
		{"[[load.stages]]\ntype = \"ramp\"\nduration = \"1s\"\nrate = 5\n[load]\nduration = \"0s\"", `load.toml:6: load.duration: must be > 0`},
		{"rate = 1\ntimeout = \"0s\"", `load.toml:2: load.timeout: must be > 0, got "0s" (leave the key out for the default, 10s)`},
		{"rate = 1\nmax_inflight = 0", `load.toml:2: load.max_inflight: must be > 0, got 0 (leave the key out for the default, 4096)`},
		{"rate = 1\nwarmup = \"1s\"\nwarmup_rate = 0", `load.toml:3: load.warmup_rate: must be > 0, got 0 (leave the key out for the default, the starting level)`},
		{"rate = 1\nwarmup = \"1s\"\nwarmup_calls = 5\nwarmup_users = 0", `load.toml:4: load.warmup_users: must be > 0, got 0`},
		// Zeros the docs give a meaning keep it.
		{"rate = 1\nwarmup = \"0s\"\nrequests = 0\nconnections = 0\nseed = 0", ""},
		{"[load]\nrate = 1\n[load.thresholds]\nerror_rate = nan", "load.toml:4: load.thresholds.error_rate: must be a finite number, got nan"},
		{"[load]\nrate = 1\ntarget = \"http://127.0.0.1:9/\"\n[load.thresholds.operations.\"GET /x\"]\np99_ms = 5",
			`load.toml:4: load.thresholds.operations."GET /x": no operation of this run is named "GET /x" (they are "total" or "GET /")`},
		{"[load]\nrate = 1\n[load.thresholds]\np99 = 5", `load.toml:4: load.thresholds.p99: unknown key`},
		// Valid: the shapes docs/LOAD.md shows.
		{"rate = 1\nmode = \"open\"\nprotocol = \"h2c\"\narrival = \"poisson\"", ""},
		{"[load]\nrate = 1\ntarget = \"http://127.0.0.1:9/cart\"\n[load.thresholds]\np99_ms = 50\nerror_rate = 0.01\nabort_on_fail = true\n[load.thresholds.operations.\"GET /cart\"]\np99_ms = 20", ""},
	}
	for _, tt := range tests {
		_, err := decodeSpec(tt.text)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.text, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%q: error %v\nwant %s", tt.text, err, tt.want)
		}
	}
	c, err := decodeSpec("[load]\nrate = 1\ntarget = \"http://127.0.0.1:9/cart\"\n[load.thresholds]\np99_ms = 50\nabort_on_fail = true\n[load.thresholds.operations.\"GET /cart\"]\nerror_rate = 0")
	if err != nil {
		t.Fatal(err)
	}
	if th := c.Thresholds; th == nil || *th.P99Ms != 50 || !th.AbortOnFail || *th.Operations["GET /cart"].ErrorRate != 0 {
		t.Errorf("thresholds decoded as %+v", c.Thresholds)
	}
}

// TestMeasureDurationSaturates: many long stages add up to at most the
// longest time.Duration, never to a negative one.
func TestMeasureDurationSaturates(t *testing.T) {
	long := Stage{Type: "step", Duration: Duration(100 * 365 * 24 * time.Hour), Rate: 1}
	c := Config{Stages: []Stage{long, long, long, long}}
	if got := c.MeasureDuration(); got != time.Duration(math.MaxInt64) {
		t.Errorf("MeasureDuration() = %v, want the longest duration", got)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "load.stages: take more than") {
		t.Errorf("Validate() = %v, want the stages refused", err)
	}
}
