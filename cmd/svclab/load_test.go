package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/pki"
)

func TestLoadCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.toml")
	os.WriteFile(spec, []byte("[load]\nrate = 10\nrte = 3\n"), 0o644)
	noLoad := filepath.Join(dir, "noload.toml")
	os.WriteFile(noLoad, []byte("[app]\nname = \"x\"\n"), 0o644)
	const url = "http://127.0.0.1:9/"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"--rate", "5"}, "no target"},
		{"rate <= 0", []string{"--rate", "-5", url}, "--rate: must be > 0, got -5"},
		{"zero rate", []string{"--rate", "0", url}, "--rate: must be > 0, got 0"},
		{"negative duration", []string{"--rate", "5", "--duration", "-3s", url}, "--duration: must not be negative, got -3s"},
		{"zero duration", []string{"--rate", "5", "--duration", "0s", url}, `--duration: must be > 0, got "0s"`},
		{"zero timeout", []string{"--rate", "5", "--timeout", "0s", url}, `--timeout: must be > 0, got "0s"`},
		{"unknown stage type", []string{"--stage", "jump:10s:5", url}, `--stage "jump:10s:5": type: must be "ramp" or "step", got "jump"`},
		{"bad stage", []string{"--stage", "ramp:10s", url}, "TYPE:DURATION:LEVEL"},
		{"bad mode", []string{"--mode", "half", "--rate", "1", url}, `--mode: must be "open" or "closed"`},
		{"bad --set", []string{"--set", "load.rate=-1", url}, "--set load.rate: must be > 0, got -1"},
		{"users in open loop", []string{"--mode", "open", "--users", "3", url}, `--users: applies to mode "closed"`},
		{"bad header", []string{"--rate", "1", "-H", "nocolon", url}, "want \"Name: value\""},
		{"samples without dir", []string{"--rate", "1", "--raw-samples", url}, "--raw-samples needs --dir"},
		{"two targets", []string{"--rate", "1", "--url", url, url}, "either as an argument or with --url"},
		{"unknown flag", []string{"--rat", "1", url}, "unknown flag: --rat"},
		{"remote", []string{"--rate", "1", "http://10.9.8.7/"}, "not on this machine"},
		{"unknown key in file", []string{"-f", spec, url}, "rte"},
		{"file without [load]", []string{"-f", noLoad, url}, "has no [load] table"},
		{"missing file", []string{"-f", filepath.Join(dir, "nope.toml"), url}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, stderr, code := svclab(t, ctx, nil, append([]string{"load"}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

func TestLoadCommand(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("X-Test") != "yes" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.toml")
	os.WriteFile(spec, []byte(`
[load]
rate = 1000
duration = "1s"
[load.request]
method = "POST"
body = "{}"
headers = { X-Test = "yes" }
expect_status = 202
`), 0o644)
	out := filepath.Join(dir, "summary.json")
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Flags override the file: 1000 rps becomes 50.
	stdout, stderr, code := svclab(t, ctx, nil, "load", "-f", spec, "--rate", "50", "--raw-samples", "--dir", runDir, "-o", out, srv.URL)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "POST /") || !strings.Contains(stderr, "rps") {
		t.Errorf("want a summary table and progress lines:\n%s\n%s", stdout, stderr)
	}
	var sum struct {
		Operations []struct {
			Name   string
			Count  int64
			Errors int64
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Operations) != 2 || sum.Operations[0].Count < 45 || sum.Operations[0].Count > 51 || sum.Operations[0].Errors != 0 {
		t.Errorf("summary: %+v", sum)
	}
	for _, f := range []string{"summary.json", "timeseries.parquet", "samples.parquet", "latency.hlog", "service_time.hlog"} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
			t.Errorf("--dir: %v", err)
		}
	}
}

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

// writeFile writes text to a new file in t's temporary directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
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
			file := writeFile(t, "load.toml", tt.toml)
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
		want, err := loadConfig(t, "--rate", "1", "-f", writeFile(t, "l.toml", `target = "`+url+`"`))
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
	file := writeFile(t, "spec.toml", "[load]\nrate = 1000\n[load.request]\nheaders = { A = \"file\", B = \"file\" }\n")
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
	badFile := writeFile(t, "bad.toml", "[load]\nrate = -5\n")
	flowFile := writeFile(t, "flow.toml", "[load]\nrate = 5\n[load.flow]\n[[load.flow.steps]]\npath = \"/a\"\n")
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

// errorClasses are the kinds of mistakes the corpus below makes, each
// recognised by how its message reads after the flag it names.
var errorClasses = map[string]*regexp.Regexp{
	"type":     regexp.MustCompile(`must be a (number|whole number)|must be true or false|not a duration|needs a unit`),
	"range":    regexp.MustCompile(`must be (> |>= |at most|between|a finite number)|must not be negative|out of range|an HTTP status`),
	"enum":     regexp.MustCompile(`must be "[a-z0-9]+"(, "[a-z0-9]+")* or "`),
	"target":   regexp.MustCompile(`URL|host:port|has no host|not on this machine|user info|space or control|out of range 1-65535|not supported|give one target`),
	"conflict": regexp.MustCompile(`applies to|not both|either|give one|both name|but the protocol|but the file has`),
	"missing":  regexp.MustCompile(`needs --dir|no target|needs a method`),
	"syntax":   regexp.MustCompile(`want I/N|want TYPE:DURATION:LEVEL|want "Name: value"|not a header name|want an HTTP method|not base64`),
	"io":       regexp.MustCompile(`no such file|is a directory|not a directory|cannot write|read-only|permission denied`),
	"unknown":  regexp.MustCompile(`unknown key|unknown flag|reads only the \[load\] table|no operation of this run`),
}

// TestLoadBadFlagCorpus runs svclab load with bad flag combinations, as a
// careless user or a broken script would type them. Each must exit with
// status 2 before sending anything, with an error that starts with the
// flag (or argument) the user typed and reads as its class says.
func TestLoadBadFlagCorpus(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	url := srv.URL + "/"
	dir := t.TempDir()
	aFile := writeFile(t, "file.txt", "x")
	nanFile := writeFile(t, "nan.toml", "[load]\nrate = nan\n")
	tests := badFlagCorpus(url, dir, aFile, nanFile)
	if len(tests) < 40 {
		t.Fatalf("the corpus has %d cases, want at least 40", len(tests))
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, stderr, code := svclab(t, ctx, nil, append([]string{"load", "-q"}, tt.args...)...)
			msg := strings.TrimPrefix(strings.TrimSpace(stderr), "svclab: ")
			if code != 2 || !strings.HasPrefix(msg, tt.flag) {
				t.Fatalf("exit %d, error %q\nwant exit 2 and an error starting with %q", code, msg, tt.flag)
			}
			if re := errorClasses[tt.class]; !re.MatchString(msg) {
				t.Errorf("error %q does not read as a %s error (%s)", msg, tt.class, re)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the target got %d requests from bad invocations", n)
	}
}

// TestLoadScriptable runs svclab load as a script would and checks what a
// script reads: the exit status, the operation names, the completions.
func TestLoadScriptable(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /svclab.chain.Hop/Call", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Write([]byte(`{}`))
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
	})
	srv := httptest.NewServer(mux) // anything else is a 404
	defer srv.Close()
	body := writeFile(t, "body.json", "{\"payload\": \"from a file\"}\n")
	summary := func(t *testing.T, stdout string) (ops map[string]load.Operation) {
		t.Helper()
		i := strings.Index(stdout, "{\n")
		var sum load.Summary
		if i < 0 || json.Unmarshal([]byte(stdout[i:]), &sum) != nil {
			t.Fatalf("no summary.json on stdout:\n%s", stdout)
		}
		ops = map[string]load.Operation{}
		for _, o := range sum.Operations {
			ops[o.Name] = o
		}
		return ops
	}
	run := func(t *testing.T, stdin string, args ...string) (string, string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, svclabBin, append([]string{"load", "-q", "-o", "-"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}

	t.Run("every request fails", func(t *testing.T) {
		_, stderr, code := run(t, "", "-n", "20", "--rate", "200", srv.URL+"/nothing")
		if code != 1 || !strings.Contains(stderr, "no request succeeded: all 20 failed (http_404 20)") {
			t.Fatalf("exit %d, stderr %q; want exit 1 and why", code, stderr)
		}
	})
	t.Run("operation named by the path requested, body from a file", func(t *testing.T) {
		mu.Lock()
		bodies = nil
		mu.Unlock()
		stdout, stderr, code := run(t, "", "-n", "10", "--rate", "200", "-X", "POST", "--body", "@"+body, srv.URL+"/svclab.chain.Hop/Call")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if op, ok := summary(t, stdout)["POST /svclab.chain.Hop/Call"]; !ok || op.Count != 10 || op.Errors != 0 {
			t.Errorf("operations %v: want POST /svclab.chain.Hop/Call, 10 ok", summary(t, stdout))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 10 || bodies[0] != "{\"payload\": \"from a file\"}\n" {
			t.Errorf("bodies sent: %q", bodies)
		}
	})
	t.Run("body from stdin", func(t *testing.T) {
		mu.Lock()
		bodies = nil
		mu.Unlock()
		if _, stderr, code := run(t, `{"payload": "piped"}`, "-n", "3", "--rate", "100", "-X", "POST", "--body", "@-", srv.URL+"/svclab.chain.Hop/Call"); code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 3 || bodies[0] != `{"payload": "piped"}` {
			t.Errorf("bodies sent: %q", bodies)
		}
	})
	t.Run("summary.json has the generator object and the host's floor", func(t *testing.T) {
		dir := t.TempDir()
		_, stderr, code := run(t, "", "-n", "150", "--rate", "500", "--dir", dir, srv.URL+"/svclab.chain.Hop/Call", "-X", "POST")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum load.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		g := sum.Generator
		if g == nil || g.Sends != 150 || g.Verdict == "" || g.LagMaxMs < g.LagP99Ms || g.HostTimer == nil || g.HostTimer.Samples < 100 {
			t.Fatalf("summary.json generator %+v: want 150 sends, lag percentiles, a verdict and the host timer", g)
		}
	})
	t.Run("users alone run a closed loop", func(t *testing.T) {
		stdout, stderr, code := run(t, "", "--users", "4", "-n", "40", srv.URL+"/svclab.chain.Hop/Call", "-X", "POST")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if tot := summary(t, stdout)["total"]; tot.Count != 40 || tot.Errors != 0 {
			t.Errorf("total %+v, want 40 ok", tot)
		}
		if strings.Contains(stdout, "open loop:") {
			t.Errorf("a closed loop reported as open:\n%s", stdout)
		}
	})
	t.Run("completions per second", func(t *testing.T) {
		// 1 connection to a server that takes 30 ms: at most ~33 answers
		// a second, whatever the 100 offered.
		stdout, stderr, code := run(t, "", "--rate", "100", "-d", "1s", "-c", "1", "--timeout", "5s", srv.URL+"/slow")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		tot := summary(t, stdout)["total"]
		if tot.CompletedRPS <= 0 || tot.CompletedRPS > 40 || tot.RPS < 90 {
			t.Errorf("rps %.1f, completed %.1f: want ~100 offered and at most ~33 completed", tot.RPS, tot.CompletedRPS)
		}
		if !strings.Contains(stdout, "open loop: offered 100/s, sent ") || !strings.Contains(stdout, "completed") {
			t.Errorf("no completions line:\n%s", stdout)
		}
	})
	t.Run("threshold broken", func(t *testing.T) {
		_, stderr, code := run(t, "", "-n", "20", "--rate", "200", "-X", "POST", "--set", "load.thresholds.p50_ms=0.000001",
			"--set", "load.thresholds.error_rate=0", srv.URL+"/svclab.chain.Hop/Call")
		if code != 99 || !strings.Contains(stderr, "threshold broken: total: p50_ms ") || strings.Contains(stderr, "error_rate") {
			t.Fatalf("exit %d, stderr %q; want 99 and the p50 breach only", code, stderr)
		}
	})
	t.Run("thresholds hold", func(t *testing.T) {
		_, stderr, code := run(t, "", "-n", "20", "--rate", "200", "-X", "POST", "--set", "load.thresholds.error_rate=0",
			"--set", `load.thresholds.operations."POST /svclab.chain.Hop/Call".p99_ms=5000`, srv.URL+"/svclab.chain.Hop/Call")
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
}

// badFlag is one bad command line of svclab load, the class of its
// mistake (errorClasses) and what its error must start with.
type badFlag struct {
	args  []string
	class string
	flag  string
}

// badFlagCorpus is the regression corpus of bad svclab load command
// lines: url is a live target, dir a writable directory, aFile a regular
// file and nanFile a spec whose [load] rate is nan (on line 2).
func badFlagCorpus(url, dir, aFile, nanFile string) []badFlag {
	return []badFlag{
		{[]string{"--rate", "NaN", url}, "range", "--rate"},
		{[]string{"--rate", "Inf", url}, "range", "--rate"},
		{[]string{"--rate", "-Inf", url}, "range", "--rate"},
		{[]string{"--rate", "1e12", url}, "range", "--rate"},
		{[]string{"--rate", "0", url}, "range", "--rate"},
		{[]string{"--rate", "-5", url}, "range", "--rate"},
		{[]string{"--rate", "fast", url}, "type", "--rate"},
		{[]string{"--rate", "1", "--duration", "6", url}, "type", "--duration"},
		{[]string{"--rate", "1", "-d", "soon", url}, "type", "--duration"},
		{[]string{"--rate", "1", "-d", "-3s", url}, "range", "--duration"},
		{[]string{"--rate", "1", "--timeout", "1x", url}, "type", "--timeout"},
		{[]string{"--rate", "1", "--mode", "", url}, "enum", "--mode"},
		{[]string{"--rate", "1", "--protocol", "", url}, "enum", "--protocol"},
		{[]string{"--rate", "1", "--arrival", "", url}, "enum", "--arrival"},
		{[]string{"--rate", "1", "--mode", "half", url}, "enum", "--mode"},
		{[]string{"--rate", "1", "--protocol", "ftp", url}, "enum", "--protocol"},
		{[]string{"--rate", "1", "--arrival", "burst", url}, "enum", "--arrival"},
		{[]string{"--users", "0", url}, "range", "--users"},
		{[]string{"--rate", "1", "--generators", "0", url}, "range", "--generators"},
		{[]string{"--rate", "1", "--generators", "-2", url}, "range", "--generators"},
		{[]string{"--rate", "1", "--generators", "65", url}, "range", "--generators"},
		{[]string{"--rate", "1", "--generators", "two", url}, "type", "--generators"},
		{[]string{"--rate", "1", "--shard", "2/2", "--dir", dir, url}, "range", "--shard"},
		{[]string{"--rate", "1", "--shard", "0/0", "--dir", dir, url}, "range", "--shard"},
		{[]string{"--rate", "1", "--shard", "half", "--dir", dir, url}, "syntax", "--shard"},
		{[]string{"--rate", "1", "--shard", "0/2", url}, "missing", "--shard"},
		{[]string{"--users", "2.5", url}, "type", "--users"},
		{[]string{"--users", "20000", url}, "range", "--users"},
		{[]string{"-u", "-3", url}, "range", "--users"},
		{[]string{"--mode", "closed", url}, "range", "--users"},
		{[]string{"--rate", "1", "--users", "3", url}, "conflict", "--rate and --users"},
		{[]string{"--mode", "open", "--users", "3", "--rate", "1", url}, "conflict", "--users"},
		{[]string{"--mode", "closed", "--users", "1", "--rate", "5", url}, "conflict", "--rate"},
		{[]string{"--users", "1", "--think", "5ms", "--think-min", "1ms", url}, "conflict", "--think"},
		{[]string{"--users", "1", "--think-min", "20ms", "--think-max", "10ms", url}, "range", "--think-max"},
		{[]string{"--users", "1", "--spawn-rate", "nan", url}, "range", "--spawn-rate"},
		{[]string{"--rate", "1", "-c", "-1", url}, "range", "--connections"},
		{[]string{"--rate", "1", "-c", "100000", url}, "range", "--connections"},
		{[]string{"--rate", "1", "--max-inflight", "2000000", url}, "range", "--max-inflight"},
		{[]string{"--rate", "1", "-n", "-1", url}, "range", "--requests"},
		{[]string{"--rate", "1", "-n", "1.5", url}, "type", "--requests"},
		{[]string{"--rate", "1", "--seed", "x", url}, "type", "--seed"},
		{[]string{"--stage", "jump:10s:5", url}, "enum", `--stage "jump:10s:5": type`},
		{[]string{"--stage", "ramp:10s", url}, "syntax", `--stage "ramp:10s"`},
		{[]string{"--stage", "ramp:0s:5", url}, "range", `--stage "ramp:0s:5": duration`},
		{[]string{"--stage", "ramp:10s:nan", url}, "range", `--stage "ramp:10s:nan": rate`},
		{[]string{"--stage", "ramp:10s:1e9", url}, "range", `--stage "ramp:10s:1e9": rate`},
		{[]string{"--rate", "1", "-H", "nocolon", url}, "syntax", `--header "nocolon"`},
		{[]string{"--rate", "1", "-H", "X Y: 1", url}, "syntax", "--header"},
		{[]string{"--rate", "1", "-X", "get", url}, "syntax", "--method"},
		{[]string{"--rate", "1", "--expect-status", "42", url}, "range", "--expect-status"},
		{[]string{"--rate", "1", "--raw-samples=maybe", url}, "type", "--raw-samples"},
		{[]string{"--rate", "1", "--raw-samples", url}, "missing", "--raw-samples"},
		{[]string{"--rate", "1"}, "missing", "no target"},
		{[]string{"--rate", "1", "http://127.0.0.1:99999/"}, "target", "URL"},
		{[]string{"--rate", "1", "http://127.0.0.1:9/a b"}, "target", "URL"},
		{[]string{"--rate", "1", "https://127.0.0.1:9/"}, "target", "URL"},
		{[]string{"--rate", "1", "127.0.0.1:9000"}, "target", "URL"},
		{[]string{"--rate", "1", "http://u:p@127.0.0.1:9/"}, "target", "URL"},
		{[]string{"--rate", "1", "--url", "http://127.0.0.1:0/"}, "target", "--url"},
		{[]string{"--rate", "1", "http://10.9.8.7/"}, "target", "target"},
		{[]string{"--rate", "1", url, url}, "target", "URL"},
		{[]string{"--rate", "1", "--url", url, url}, "conflict", "give the target either"},
		{[]string{"--rate", "1", "--protocol", "grpc", "--call", "a.B/C", "http://127.0.0.1:9000"}, "target", "URL"},
		{[]string{"--rate", "1", "--call", "a.B/C", "http://127.0.0.1:9000"}, "target", "URL"},
		{[]string{"--rate", "1", "--call", "a.B/C", "grpc://127.0.0.1:9000/a.B/C"}, "target", "URL"},
		{[]string{"--rate", "1", "--protocol", "http", "--call", "a.B/C", url}, "conflict", "--call"},
		{[]string{"--rate", "1", "--call", "a.B/C", "-X", "POST", "127.0.0.1:9000"}, "conflict", "--call and -X"},
		{[]string{"--rate", "1", "--protocol", "grpc", "127.0.0.1:9000"}, "missing", "--call"},
		{[]string{"--rate", "1", "--call", "a.B/C", "--body-base64", "!!", "127.0.0.1:9000"}, "syntax", "--body-base64"},
		{[]string{"--rate", "1", "--body-base64", "aGk=", url}, "conflict", "--body-base64"},
		{[]string{"--rate", "1", "--body", "@" + filepath.Join(dir, "none.json"), url}, "io", "--body"},
		{[]string{"--rate", "1", "-o", filepath.Join(dir, "none", "s.json"), url}, "io", "-o"},
		{[]string{"--rate", "1", "-o", dir, url}, "io", "-o"},
		{[]string{"--rate", "1", "--dir", aFile, url}, "io", "--dir"},
		{[]string{"--rate", "1", "--dir", "/proc/svclab-test", url}, "io", "--dir"},
		{[]string{"--rate", "1", "--set", "load.rte=3", url}, "unknown", "--set load.rte"},
		{[]string{"--rate", "1", "--set", "deploy.transport=http", url}, "unknown", "--set deploy.transport"},
		{[]string{"--set", "load.rate=nan", url}, "range", "--set load.rate"},
		{[]string{"--rate", "1", "--set", "load.thresholds.error_rate=2", url}, "range", "--set load.thresholds.error_rate"},
		{[]string{"--rate", "1", "--set", `load.thresholds.operations."GET /x".p99_ms=5`, url}, "unknown", `--set load.thresholds.operations."GET /x".p99_ms`},
		{[]string{"--rat", "1", url}, "unknown", "unknown flag: --rat"},
		{[]string{"-f", nanFile, url}, "range", nanFile + ":2: load.rate"},
		{[]string{"-f", filepath.Join(dir, "none.toml"), url}, "io", "--file"},
	}
}

// TestLoadGRPCEntryWithoutCall: the entry `svclab up` prints for gRPC,
// given without --call, gets the advice to add --call and the methods of
// the apps' entries, not a request for an http:// URL.
func TestLoadGRPCEntryWithoutCall(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"grpc+tcp://127.0.0.1:9", "grpc://127.0.0.1:9"} {
		_, stderr, code := svclab(t, context.Background(), nil, "load", "--rate", "10", "--duration", "1s", target)
		if code != 2 || strings.Contains(stderr, "http://") ||
			!strings.Contains(stderr, target+" is a gRPC entry: add --call") ||
			!strings.Contains(stderr, "  chain: svclab.chain.Hop/Call\n") {
			t.Errorf("%s: exit %d, stderr:\n%s", target, code, stderr)
		}
	}
}
