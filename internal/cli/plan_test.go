package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/spec"
)

// TestParseDecision reads svclab-analysis decide's JSON (docs/ANALYSIS.md)
// into the runner's lines: a bound the data cannot give yet is "?".
func TestParseDecision(t *testing.T) {
	in := `{"decided": false, "sequential": true, "questions": [{"name": "mesh cost", "decided": false, "runs": 8, "blocks": 2, "flagged": 1,
	  "ratios": [{"by": {"deploy.transport": "grpc"}, "level": "{}", "base": "{}", "ratio": 1.234, "low": null, "high": null, "verdict": "undecided", "confidence": 0.975},
	    {"by": {"deploy.transport": "http"}, "level": "{}", "base": "{}", "ratio": 1.01, "low": 0.96, "high": 1.07, "verdict": "holds", "confidence": 0.975}],
	  "notes": ["2 usable blocks for a ratio: the confidence sequence needs 4 or more for a finite interval"]}]}`
	d, err := parseDecision([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mesh cost: undecided (8 runs, 2 complete blocks; 1 flagged run left out: the load generator was its bottleneck)",
		"  deploy.transport=grpc: 1.23× (97.5% CI ? to ?) undecided",
		"  deploy.transport=http: 1.01× (97.5% CI 0.96 to 1.07) holds",
		"  2 usable blocks for a ratio: the confidence sequence needs 4 or more for a finite interval",
	}
	if d.Decided || strings.Join(d.Lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("decision %v:\n%s\nwant:\n%s", d.Decided, strings.Join(d.Lines, "\n"), strings.Join(want, "\n"))
	}
	if _, err := parseDecision([]byte("decided")); err == nil {
		t.Error("no error for an answer that is not JSON")
	}
}

// TestPlanExternalAllAtOnce: svclab plan reports every mistake of an
// external spec together, each at its file, line and key: a url on
// another machine is refused without --allow-remote, beside the rest
// rather than instead of it; a good spec plans.
func TestPlanExternalAllAtOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "setup.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const bad = `[deploy]
deployer = "external"
placement = "split"

[deploy.external]
url = "%s"
setup = ["./nosuch.sh", "{deploy.external.replica}"]
teardwon = ["./reset.sh"]
processes = [999999]
replicas = 2

[app]
name = "chain"

[load]
rate = 10
duration = "5s"

[experiment.factors]
"load.rate" = [10, 20]
`
	rest := []string{
		"3 deploy.placement",
		"7 deploy.external.setup", // ./nosuch.sh
		"7 deploy.external.setup", // {deploy.external.replica}
		"8 deploy.external.teardwon",
		"9 deploy.external.processes",
		"10 deploy.external.replicas",
		"12 app",
		"15 load",
	}
	good := fmt.Sprintf(`[deploy]
deployer = "external"
[deploy.external]
url = "%%s"
setup = ["./setup.sh", "{deploy.external.replicas}"]
processes = [%d]
replicas = 1
[load]
rate = 10
duration = "5s"
[load.request]
path = "/"
[experiment.factors]
"deploy.external.replicas" = [1, 2]
`, os.Getpid())
	for _, tc := range []struct {
		name, src string
		args      []string
		want      []string // "line key", one per error, in file order
	}{
		{name: "remote url beside the rest", src: fmt.Sprintf(bad, "http://192.0.2.1:8080"),
			want: append([]string{rest[0], "6 deploy.external.url"}, rest[1:]...)},
		{name: "remote url allowed", args: []string{"--allow-remote"}, src: fmt.Sprintf(bad, "http://192.0.2.1:8080"), want: rest},
		{name: "loopback url", src: fmt.Sprintf(bad, "http://127.0.0.1:8080"), want: rest},
		{name: "remote url of a good spec", src: fmt.Sprintf(good, "http://192.0.2.1:8080"), want: []string{"4 deploy.external.url"}},
		{name: "good", src: fmt.Sprintf(good, "http://127.0.0.1:8080")},
		{name: "good, remote allowed", args: []string{"--allow-remote"}, src: fmt.Sprintf(good, "http://192.0.2.1:8080")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".toml")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			c := newPlanCmd()
			var out bytes.Buffer
			c.SetOut(&out)
			c.SetErr(&out)
			c.SetArgs(append(tc.args, path))
			err := c.ExecuteContext(context.Background())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("plan: %v", err)
				}
				return
			}
			if !badInput(err) {
				t.Errorf("plan: %v, want bad input", err)
			}
			var ue usageError
			if errors.As(err, &ue) {
				err = ue.err
			}
			got := spec.ErrorLines(err, path)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%d errors at\n%s\nwant %d at\n%s\nerrors:\n%v", len(got), strings.Join(got, "\n"), len(tc.want), strings.Join(tc.want, "\n"), err)
			}
		})
	}
}

// TestPlanCountsInEnglish: svclab plan counts one run, design point or
// repetition in the singular and more in the plural.
func TestPlanCountsInEnglish(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, experiment string
		want, not        []string
	}{
		{"one run", "repetitions = 1\n",
			[]string{"1 design point x 1 repetition = 1 run,", "design point 1: the spec as written (no factors), run 1\n"},
			[]string{"1 runs", "1 repetitions", "1 design points", "runs 1\n"}},
		{"two runs", "repetitions = 2\n",
			[]string{"1 design point x 2 repetitions = 2 runs,", "design point 1: the spec as written (no factors), runs 1,2\n"},
			[]string{"1 design points"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".toml")
			src := "[app]\nname = \"chain\"\n[load]\nrate = 10\nduration = \"1s\"\n[experiment]\nname = \"x\"\n" + tc.experiment
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			c := newPlanCmd()
			var out bytes.Buffer
			c.SetOut(&out)
			c.SetErr(&out)
			c.SetArgs([]string{path})
			if err := c.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("plan: %v\n%s", err, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("plan's output lacks %q:\n%s", w, out.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out.String(), n) {
					t.Errorf("plan's output says %q:\n%s", n, out.String())
				}
			}
		})
	}
}
