package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/cli/clitest"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/pki"
)

// loadConfig is the load.Config that `svclab load args...` would run with.
func loadConfig(t *testing.T, args ...string) (load.Config, error) {
	t.Helper()
	o := new(loadOptions)
	c := o.command()
	if err := c.ParseFlags(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return o.config(c.Flags(), c.Flags().Args())
}

// TestLoadFlagsAreKeys checks that each flag of `svclab load` is its
// [load] key: the flags, the same values as --set load.KEY=VALUE, and the
// same keys in a file give one Config.
func TestLoadFlagsAreKeys(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:9/base"
	dir := t.TempDir() // --raw-samples needs one; nothing is written
	// --cacert, --cert and --key need files that hold PEM.
	ca, err := pki.NewCA("flags")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := ca.Write(t.TempDir(), "svclab.client")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		flags []string
		sets  []string
		toml  string
	}{
		{"rate", []string{"--rate", "50"}, []string{"load.rate=50"}, "rate = 50"},
		{"warm-up by calls", []string{"--rate", "50", "--warmup", "30s", "--warmup-calls", "2000", "--warmup-users", "4"},
			[]string{"load.rate=50", "load.warmup=30s", "load.warmup_calls=2000", "load.warmup_users=4"},
			"rate = 50\nwarmup = \"30s\"\nwarmup_calls = 2000\nwarmup_users = 4"},
		{"generators", []string{"--rate", "50", "--generators", "3"}, []string{"load.rate=50", "load.generators=3"}, "rate = 50\ngenerators = 3"},
		// Numbers and booleans read as Go's flag package reads them.
		{"Go number and bool forms", []string{"--rate", ".5", "--raw-samples=1", "--dir", dir},
			[]string{"load.rate=0.5", "load.raw_samples=true"}, "rate = 0.5\nraw_samples = true"},
		{"open loop",
			[]string{"--mode", "open", "--protocol", "h2c", "--rate", "7.5", "--arrival", "poisson", "-d", "2s", "--warmup", "500ms", "--warmup-rate", "40",
				"-c", "3", "--max-inflight", "10", "--timeout", "1s", "-n", "100", "--seed", "-7", "--raw-samples"},
			[]string{"load.mode=open", "load.protocol=h2c", "load.rate=7.5", "load.arrival=poisson", `load.duration="2s"`, "load.warmup=500ms", "load.warmup_rate=40",
				"load.connections=3", "load.max_inflight=10", "load.timeout=1s", "load.requests=100", "load.seed=-7", "load.raw_samples=true"},
			`mode = "open"
protocol = "h2c"
rate = 7.5
arrival = "poisson"
duration = "2s"
warmup = "500ms"
warmup_rate = 40
connections = 3
max_inflight = 10
timeout = "1s"
requests = 100
seed = -7
raw_samples = true`},
		{"closed loop",
			[]string{"--mode", "closed", "-u", "4", "--think-min", "10ms", "--think-max", "20ms", "--spawn-rate", "2.5"},
			[]string{"load.mode=closed", "load.users=4", "load.think_min=10ms", "load.think_max=20ms", "load.spawn_rate=2.5"},
			`mode = "closed"
users = 4
think_min = "10ms"
think_max = "20ms"
spawn_rate = 2.5`},
		{"think time", []string{"--mode", "closed", "-u", "1", "--think", "50ms"},
			[]string{"load.mode=closed", "load.users=1", "load.think_time=50ms"},
			"mode = \"closed\"\nusers = 1\nthink_time = \"50ms\""},
		{"open stages", []string{"--stage", "ramp:10s:500", "--stage", "step:5s:250.5"},
			[]string{`load.stages=[{type="ramp", duration="10s", rate=500}, {type="step", duration="5s", rate=250.5}]`},
			"[[load.stages]]\ntype = \"ramp\"\nduration = \"10s\"\nrate = 500\n[[load.stages]]\ntype = \"step\"\nduration = \"5s\"\nrate = 250.5"},
		{"closed stages", []string{"--mode", "closed", "--stage", "ramp:10s:8"},
			[]string{"load.mode=closed", `load.stages=[{type="ramp", duration="10s", users=8}]`},
			"[load]\nmode = \"closed\"\n[[load.stages]]\ntype = \"ramp\"\nduration = \"10s\"\nusers = 8"},
		{"HTTP request",
			[]string{"--rate", "1", "-X", "POST", "--body", `{"n": 3}`, "-H", "X-A: 1", "-H", "X-B:two", "--expect-status", "201"},
			[]string{"load.rate=1", "load.request.method=POST", `load.request.body='{"n": 3}'`, `load.request.headers={X-A="1", X-B="two"}`, "load.request.expect_status=201"},
			"[load]\nrate = 1\n[load.request]\nmethod = \"POST\"\nbody = '{\"n\": 3}'\nheaders = {X-A = \"1\", X-B = \"two\"}\nexpect_status = 201"},
		// --users implies a closed loop, as k6's --vus does.
		{"users alone", []string{"-u", "4"}, []string{"load.mode=closed", "load.users=4"}, "mode = \"closed\"\nusers = 4"},
		// --call implies gRPC, as ghz's --call names a gRPC method.
		{"call alone", []string{"--call", "svclab.echo.Echo/Echo", "--rate", "1"},
			[]string{"load.protocol=grpc", "load.request.method=svclab.echo.Echo/Echo", "load.rate=1"},
			"[load]\nprotocol = \"grpc\"\nrate = 1\n[load.request]\nmethod = \"svclab.echo.Echo/Echo\""},
		{"gRPC over TLS",
			[]string{"--call", "svclab.echo.Echo/Echo", "--rate", "1", "--cacert", cred.CA, "--cert", cred.Cert, "--key", cred.Key, "--server-name", "localhost"},
			[]string{"load.protocol=grpc", "load.request.method=svclab.echo.Echo/Echo", "load.rate=1",
				`load.tls.ca="` + cred.CA + `"`, `load.tls.cert="` + cred.Cert + `"`, `load.tls.key="` + cred.Key + `"`, "load.tls.server_name=localhost"},
			"[load]\nprotocol = \"grpc\"\nrate = 1\n[load.request]\nmethod = \"svclab.echo.Echo/Echo\"\n[load.tls]\nca = \"" + cred.CA +
				"\"\ncert = \"" + cred.Cert + "\"\nkey = \"" + cred.Key + "\"\nserver_name = \"localhost\""},
		{"gRPC request",
			[]string{"--protocol", "grpc", "--rate", "1", "--call", "svclab.echo.Echo/Echo", "--body-base64", "aGk="},
			[]string{"load.protocol=grpc", "load.rate=1", "load.request.method=svclab.echo.Echo/Echo", "load.request.body_base64=aGk="},
			"[load]\nprotocol = \"grpc\"\nrate = 1\n[load.request]\nmethod = \"svclab.echo.Echo/Echo\"\nbody_base64 = \"aGk=\""},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := url
			if strings.Contains(tt.toml, "grpc") {
				target = "127.0.0.1:9"
			}
			file := clitest.WriteFile(t, "load.toml", tt.toml)
			fromFile, err := loadConfig(t, "--dir", dir, "-f", file, target)
			if err != nil {
				t.Fatalf("from the file: %v", err)
			}
			if reflect.DeepEqual(fromFile, load.Config{Target: target}) {
				t.Fatalf("the file set nothing: %+v", fromFile)
			}
			fromFlags, err := loadConfig(t, append(append([]string{"--dir", dir}, tt.flags...), target)...)
			if err != nil {
				t.Fatalf("from flags: %v", err)
			}
			setArgs := []string{"--dir", dir}
			for _, a := range tt.sets {
				setArgs = append(setArgs, "--set", a)
			}
			fromSet, err := loadConfig(t, append(setArgs, target)...)
			if err != nil {
				t.Fatalf("from --set: %v", err)
			}
			if !reflect.DeepEqual(fromFlags, fromFile) {
				t.Errorf("flags %q give\n%+v\nthe file gives\n%+v", tt.flags, fromFlags, fromFile)
			}
			if !reflect.DeepEqual(fromSet, fromFile) {
				t.Errorf("--set %q gives\n%+v\nthe file gives\n%+v", tt.sets, fromSet, fromFile)
			}
		})
		for _, a := range tt.flags {
			covered[a] = true
		}
	}
	t.Run("target", func(t *testing.T) {
		want, err := loadConfig(t, "--rate", "1", "-f", clitest.WriteFile(t, "l.toml", `target = "`+url+`"`))
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"--rate", "1", url}, {"--rate", "1", "--url", url}, {"--rate", "1", "--set", "load.target=" + url}} {
			got, err := loadConfig(t, args...)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%q: %+v, %v; want %+v", args, got, err, want)
			}
		}
	})
	covered["--url"] = true
	// A new flag in loadKeyFlags needs a row here.
	for _, kf := range loadKeyFlags {
		if !covered["--"+kf.name] && (kf.short == "" || !covered["-"+kf.short]) {
			t.Errorf("no test row gives --%s", kf.name)
		}
	}
}

// TestLoadFlagPrecedence checks the order the settings are applied in:
// the file, then --set, then flags; and that headers add to the file's.
func TestLoadFlagPrecedence(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:9/"
	file := clitest.WriteFile(t, "spec.toml", "[load]\nrate = 1000\n[load.request]\nheaders = { A = \"file\", B = \"file\" }\n")
	tests := []struct {
		args    []string
		rate    float64
		headers map[string]string
	}{
		{[]string{"-f", file}, 1000, map[string]string{"A": "file", "B": "file"}},
		{[]string{"-f", file, "--set", "load.rate=10"}, 10, map[string]string{"A": "file", "B": "file"}},
		{[]string{"-f", file, "--rate", "50", "--set", "load.rate=10"}, 50, map[string]string{"A": "file", "B": "file"}},
		{[]string{"-f", file, "-H", "B: flag", "-H", "C: flag"}, 1000, map[string]string{"A": "file", "B": "flag", "C": "flag"}},
		{[]string{"--rate", "5", "--rate", "6"}, 6, nil},
	}
	for _, tt := range tests {
		cfg, err := loadConfig(t, append(tt.args, url)...)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		var headers map[string]string
		if cfg.Request != nil {
			headers = cfg.Request.Headers
		}
		if cfg.Rate != tt.rate || !reflect.DeepEqual(headers, tt.headers) {
			t.Errorf("%q: rate %v, headers %v; want %v, %v", tt.args, cfg.Rate, headers, tt.rate, tt.headers)
		}
	}
}

// TestLoadFlagErrors checks that a bad value meets the checks of its key,
// and that the error names what the user typed: the flag, or --set KEY
// with the same message.
func TestLoadFlagErrors(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:9/"
	badFile := clitest.WriteFile(t, "bad.toml", "[load]\nrate = -5\n")
	flowFile := clitest.WriteFile(t, "flow.toml", "[load]\nrate = 5\n[load.flow]\n[[load.flow.steps]]\npath = \"/a\"\n")
	tests := []struct {
		flags []string
		sets  []string // the same values through --set, when there is a plain key
		want  string   // "--flag: message"; with --set, "--set KEY: message"
	}{
		{[]string{"--rate", "abc"}, []string{"load.rate=abc"}, "--rate: must be a number, got \"abc\""},
		{[]string{"--rate", "-5"}, []string{"load.rate=-5"}, "--rate: must be > 0, got -5"},
		{[]string{"--rate", "1", "-d", "soon"}, []string{"load.rate=1", "load.duration=soon"}, `--duration: not a duration (write e.g. "30s" or "1m30s"): "soon"`},
		{[]string{"--rate", "1", "--timeout", "-1s"}, []string{"load.rate=1", "load.timeout=-1s"}, "--timeout: must not be negative, got -1s"},
		{[]string{"--mode", "closed", "-u", "2.5"}, []string{"load.mode=closed", "load.users=2.5"}, "--users: must be a whole number, got 2.5"},
		{[]string{"--mode", "open", "--rate", "1", "--users", "3"}, []string{"load.mode=open", "load.rate=1", "load.users=3"}, `--users: applies to mode "closed" only, got 3 with mode "open"`},
		{[]string{"--rate", "1", "-X", "get"}, []string{"load.rate=1", "load.request.method=get"}, `--method: want an HTTP method such as GET or POST, got "get"`},
		{[]string{"--rate", "1", "--expect-status", "42"}, []string{"load.rate=1", "load.request.expect_status=42"}, "--expect-status: must be an HTTP status 100-599, got 42"},
		{[]string{"--rate", "1", "--raw-samples=maybe"}, []string{"load.rate=1", "load.raw_samples=maybe"}, "--raw-samples: must be true or false, got \"maybe\""},
		{[]string{"--stage", "jump:10s:5"}, nil, `--stage "jump:10s:5": type: must be "ramp" or "step", got "jump"`},
		{[]string{"--stage", "ramp:10s:5", "--stage", "step:0s:5"}, nil, `--stage "step:0s:5": duration: must be > 0, got 0s`},
		{[]string{"--stage", "ramp:zz:5"}, nil, `--stage "ramp:zz:5": duration: not a duration (write e.g. "30s" or "1m30s"): "zz"`},
		{[]string{"--stage", "ramp:10s"}, nil, `--stage "ramp:10s": want TYPE:DURATION:LEVEL, e.g. ramp:30s:500`},
		{[]string{"--rate", "1", "-H", "nocolon"}, nil, `--header "nocolon": want "Name: value"`},
		{[]string{"-f", badFile, "--rate", "0"}, nil, "--rate: must be > 0, got 0"},
		{[]string{"-f", flowFile, "-X", "POST"}, nil, "--method sets [load.request], but the file has a [load.flow]; a flow's requests are its steps"},
		{[]string{"--set", "load.rte=3"}, nil, `--set load.rte: unknown key (did you mean "rate"?)`},
		{[]string{"--set", "deploy.transport=http"}, nil, "--set deploy.transport: svclab load reads only the [load] table; write load.KEY=VALUE"},
	}
	for _, tt := range tests {
		_, err := loadConfig(t, append(tt.flags, url)...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: error %v\nwant %s", tt.flags, err, tt.want)
		}
		if tt.sets == nil {
			continue
		}
		var args []string
		for _, a := range tt.sets {
			args = append(args, "--set", a)
		}
		key, _, _ := strings.Cut(tt.sets[len(tt.sets)-1], "=")
		_, msg, _ := strings.Cut(tt.want, ": ")
		_, err = loadConfig(t, append(args, url)...)
		if want := "--set " + key + ": " + msg; err == nil || err.Error() != want {
			t.Errorf("--set %q: error %v\nwant %s", tt.sets, err, want)
		}
	}
	// A bad value in the file, with no flag for its key, is located there.
	_, err := loadConfig(t, "-f", badFile, url)
	if want := badFile + ":2: load.rate: must be > 0, got -5"; err == nil || err.Error() != want {
		t.Errorf("file error %v, want %s", err, want)
	}
}
