// Package clitest holds what the CLI's tests share across its two test
// packages: internal/cli's, which call the commands' code in process, and
// cmd/svclab's, which run the built binary.
package clitest

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes text to a new file in t's temporary directory and
// returns its path.
func WriteFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// BadFlag is one bad command line of svclab load, the class of its
// mistake and what its error must start with.
type BadFlag struct {
	Args  []string
	Class string
	Flag  string
}

// BadFlagCorpus is the regression corpus of bad svclab load command
// lines: url is a live target, dir a writable directory, aFile a regular
// file and nanFile a spec whose [load] rate is nan (on line 2).
func BadFlagCorpus(url, dir, aFile, nanFile string) []BadFlag {
	return []BadFlag{
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
