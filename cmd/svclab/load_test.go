package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cli/clitest"
	"github.com/svclab/svclab/internal/load"
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

// writeFile writes text to a new file in t's temporary directory.
var writeFile = clitest.WriteFile

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
	tests := clitest.BadFlagCorpus(url, dir, aFile, nanFile)
	if len(tests) < 40 {
		t.Fatalf("the corpus has %d cases, want at least 40", len(tests))
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.Args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, stderr, code := svclab(t, ctx, nil, append([]string{"load", "-q"}, tt.Args...)...)
			msg := strings.TrimPrefix(strings.TrimSpace(stderr), "svclab: ")
			if code != 2 || !strings.HasPrefix(msg, tt.Flag) {
				t.Fatalf("exit %d, error %q\nwant exit 2 and an error starting with %q", code, msg, tt.Flag)
			}
			if re := errorClasses[tt.Class]; !re.MatchString(msg) {
				t.Errorf("error %q does not read as a %s error (%s)", msg, tt.Class, re)
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
		stdout, stderr, code := run(t, "", "-n", "20", "--rate", "200", srv.URL+"/nothing")
		if code != 1 || !strings.Contains(stderr, "no request succeeded: all 20 failed (http_404 20); the first of each: http_404: HTTP status 404") {
			t.Fatalf("exit %d, stderr %q; want exit 1 and why", code, stderr)
		}
		if got := summary(t, stdout)["total"].ErrorExamples; got["http_404"] != "HTTP status 404" {
			t.Errorf("summary.json error_examples %v, want the 404's words", got)
		}
	})
	// As k6 does, a run in which no connection was made says what the
	// dial met, from one generator or from several (merged).
	t.Run("no connection, and why", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := ln.Addr().String()
		ln.Close()
		for _, gens := range []string{"1", "2"} {
			stdout, stderr, code := run(t, "", "-n", "20", "--rate", "200", "--generators", gens, "http://"+closed+"/x")
			want := "(connection 20); the first of each: connection: dial tcp " + closed + ": connect: connection refused"
			if code != 1 || !strings.Contains(stderr, want) {
				t.Fatalf("%s generators: exit %d, stderr %q; want exit 1 and %q", gens, code, stderr, want)
			}
			if got := summary(t, stdout)["GET /x"].ErrorExamples["connection"]; !strings.Contains(got, "connection refused") {
				t.Errorf("%s generators: summary.json error_examples of GET /x: %q", gens, got)
			}
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
