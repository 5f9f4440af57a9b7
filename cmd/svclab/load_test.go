package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadCommandErrors(t *testing.T) {
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
		{"negative duration", []string{"--rate", "5", "--duration", "-3s", url}, "--duration: must be >= 0, got -3s"},
		{"unknown stage type", []string{"--stage", "jump:10s:5", url}, `unknown stage type "jump"`},
		{"bad stage", []string{"--stage", "ramp:10s", url}, "TYPE:DURATION:LEVEL"},
		{"bad mode", []string{"--mode", "half", "--rate", "1", url}, `--mode: must be "open" or "closed"`},
		{"users in open loop", []string{"--rate", "1", "--users", "3", url}, `--users: applies to mode "closed"`},
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
