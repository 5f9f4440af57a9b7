package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svclab/svclab/apps/synth"
)

// TestSynthShow prints a generated graph as TOML, reads that back as a
// spec and prints it again: the same text, so a frozen graph is the
// graph. The dot output names every service.
func TestSynthShow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.toml")
	if err := os.WriteFile(gen, []byte(`[app]
name = "synth"
[app.graph]
kind = "barabasi_albert"
services = 12
m = 2
seed = 5
work = { cpu = "exp(500us)" }
response = "uniform(100B, 2KiB)"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var first strings.Builder
	if err := synthShow(gen, nil, synthTOML, &first, io.Discard); err != nil {
		t.Fatal(err)
	}
	frozen := filepath.Join(dir, "frozen.toml")
	if err := os.WriteFile(frozen, []byte(first.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var second strings.Builder
	if err := synthShow(frozen, nil, synthTOML, &second, io.Discard); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("frozen graph prints differently:\n%s\nthen\n%s", first.String(), second.String())
	}
	if !strings.Contains(first.String(), "[app.services.s11]") {
		t.Errorf("no s11 in:\n%s", first.String())
	}
	var dot strings.Builder
	if err := synthShow(gen, []string{"app.graph.services=3"}, synthDot, &dot, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dot.String(), "strict digraph synth {") || !strings.Contains(dot.String(), "s0 -> s1") || strings.Contains(dot.String(), "s3") {
		t.Errorf("dot of 3 services:\n%s", dot.String())
	}
	err := synthShow(gen, []string{"app.graph.m=20"}, synthTOML, &dot, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "app.graph.m: must be at least 1 and below services (12), got 20") {
		t.Errorf("m above services: %v", err)
	}
}

// TestSynthImport imports the made-up sample trace: the spec it writes
// reads back as a synth spec, and its first lines say what was dropped.
func TestSynthImport(t *testing.T) {
	t.Parallel()
	var out, report strings.Builder
	if err := synthImport("../../apps/synth/testdata/alibaba-2022-sample.csv", synth.ImportOptions{CPUShare: 0.25, Paths: 2}, "2KiB", &out, &report); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# dropped 1 row: duplicate row\n", "paths = [\n  \"MS_21(", "# entry MS_10: 149 traces imported", "[app.services.MS_db1]\n", `response = "2KiB"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("spec lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(report.String(), `does not parse: line 2220, field 11 "rt" (character 72)`) {
		t.Errorf("report: %s", report.String())
	}
	path := filepath.Join(t.TempDir(), "imported.toml")
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var again strings.Builder
	if err := synthShow(path, nil, synthTOML, &again, io.Discard); err != nil {
		t.Fatalf("the imported spec does not read back: %v", err)
	}
	err := synthImport("../../apps/synth/testdata/alibaba-2022-sample.csv", synth.ImportOptions{Entry: "MS_404"}, "2KiB", &out, &report)
	if err == nil || !strings.Contains(err.Error(), `--entry MS_404: no complete trace has that entry (entries: MS_10, MS_90)`) || !badInput(err) {
		t.Errorf("unknown entry: %v", err)
	}
}
