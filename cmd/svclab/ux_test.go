package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestBadInputExitsTwo: a bad spec exits with status 2 before anything
// starts, whether the file or --set holds the mistake, and for plan and
// run alike; the error names where the mistake is.
func TestBadInputExitsTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeSpecFile(t, dir, "good.toml", "[app]\nname = \"chain\"\n[load]\nrate = 10\nduration = \"1s\"\n")
	badRate := writeSpecFile(t, dir, "bad.toml", "[app]\nname = \"chain\"\n[load]\nrate = -1\nduration = \"1s\"\n")
	unknown := writeSpecFile(t, dir, "unknown.toml", "[app]\nname = \"chain\"\n[load]\nrte = 10\n")
	zero := writeSpecFile(t, dir, "zero.toml", "[app]\nname = \"chain\"\n[load]\nrate = 10\nduration = \"0s\"\n")
	remote := writeSpecFile(t, dir, "remote.toml", "[app]\nname = \"chain\"\n[load]\nrate = 10\ntarget = \"http://10.9.8.7/\"\n")
	remoteLevel := writeSpecFile(t, dir, "remotelevel.toml", "[app]\nname = \"chain\"\n[load]\nrate = 10\n[experiment.factors]\n\"load.target\" = [\"http://127.0.0.1:9/\", \"http://10.9.8.7/\"]\n")
	noName := writeSpecFile(t, dir, "noname.toml", "[app]\nname = \"chain\"\n[load]\nrate = 10\n[experiment]\nname = \"\"\n")
	results := filepath.Join(dir, "results")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"value in the file", []string{badRate}, "bad.toml:4: load.rate: must be > 0, got -1"},
		{"value from --set", []string{"--set", "load.rate=-1", good}, "--set load.rate=-1: load.rate: must be > 0, got -1"},
		{"unknown key in the file", []string{unknown}, "unknown.toml:4: load.rte"},
		{"unknown key from --set", []string{"--set", "load.rte=1", good}, "--set load.rte=1"},
		{"remote target", []string{remote}, `remote.toml:5: load.target: target "http://10.9.8.7/" is not on this machine (10.9.8.7 is not a loopback address); pass --allow-remote to load it anyway`},
		{"remote target by a factor", []string{remoteLevel}, `remotelevel.toml:6: experiment.factors."load.target": target "http://10.9.8.7/" is not on this machine`},
		{"remote target by --set", []string{"--set", "load.target=http://10.9.8.7/", good}, `--set load.target=http://10.9.8.7/: load.target: target "http://10.9.8.7/" is not on this machine`},
		{"zero duration", []string{zero}, `zero.toml:5: load.duration: must be > 0, got "0s"`},
		{"zero experiment.duration", []string{"--set", "experiment.duration=0s", good}, "--set experiment.duration=0s: experiment.duration: must be > 0"},
		{"empty experiment.name", []string{noName}, `noname.toml:6: experiment.name: must be letters, digits, '.', '_' or '-' (it names a directory), got ""`},
		{"missing file", []string{filepath.Join(dir, "nope.toml")}, "no such file"},
		{"no [load] table", []string{"../../experiments/chain.toml"}, "../../experiments/chain.toml: the spec has no [load] table, so it can be deployed (svclab up ../../experiments/chain.toml) but not run or planned"},
		// A value means what it says: "0s" was read as the default.
		{"start_timeout 0s", []string{"--set", `deploy.start_timeout="0s"`, good}, `--set deploy.start_timeout="0s": deploy.start_timeout: must be positive, e.g. "30s", got 0s`},
		// A million replicas planned fine, and failed in the run.
		{"replicas past the machine", []string{"--set", `deploy.placement="split"`, "--set", "deploy.replicas.hop2=1000000", good},
			"--set deploy.replicas.hop2=1000000: deploy.replicas.hop2: must be at most"},
		{"autoscale max past the machine", []string{"--set", `deploy.placement="split"`, "--set", "deploy.autoscale.hop2={min=1,max=1000000,cpu_target=50}", good},
			"deploy.autoscale.hop2.max: must be at most"},
		// A fault after the measurement never fired, without a word.
		{"fault after the measurement", []string{"--set", `deploy.placement="split"`, "--set", `deploy.faults.kill={target="hop2",start="5s"}`, good},
			`deploy.faults.kill.start: 5s is not before the end of the measurement (1s long`},
	}
	for _, cmd := range [][]string{{"plan"}, {"run", "--no-report", "--results", results}} {
		for _, tc := range tests {
			t.Run(cmd[0]+" "+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, stderr, code := svclab(t, ctx, nil, append(append([]string{}, cmd...), tc.args...)...)
				if code != 2 || !strings.Contains(stderr, tc.want) {
					t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tc.want)
				}
			})
		}
	}
	ctx0, cancel0 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel0()
	if _, stderr, code := svclab(t, ctx0, nil, "run", "--report", "--no-report", "--results", results, good); code != 2 || !strings.Contains(stderr, "--report and --no-report") {
		t.Errorf("run --report --no-report: exit %d, %q; want 2", code, stderr)
	}
	// --ui's address is optional, so "--ui ADDR" leaves ADDR as the spec.
	if _, stderr, code := svclab(t, ctx0, nil, "run", "--ui", "127.0.0.1:9999", "--results", results, good); code != 2 || !strings.Contains(stderr, `--ui takes its address after an "=" (--ui=127.0.0.1:9999)`) {
		t.Errorf("run --ui ADDR: exit %d, %q; want 2 and the hint to write --ui=ADDR", code, stderr)
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Errorf("a refused run made %s (%v)", results, err)
	}
	// --allow-remote takes a target elsewhere (plan only: run would load it).
	ctxR, cancelR := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelR()
	if _, stderr, code := svclab(t, ctxR, nil, "plan", "--allow-remote", remote); code != 0 {
		t.Errorf("plan --allow-remote: exit %d\n%s", code, stderr)
	}
	// With a [load] given by --set, a deployment spec plans.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, stderr, code := svclab(t, ctx, nil, "plan", "--set", "load.rate=10", "--set", "load.duration=1s", "../../experiments/chain.toml"); code != 0 {
		t.Errorf("plan with [load] from --set: exit %d\n%s", code, stderr)
	}
}

// TestWrongCommandLineExitsTwo: a wrong argument count or an unknown
// subcommand is bad input, at every level, as a wrong flag is; a group of
// commands called alone shows its help and succeeds.
func TestWrongCommandLineExitsTwo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bogus"}, 2, `unknown command "bogus" for "svclab"`},
		{[]string{"rn"}, 2, "did you mean run or up?"},
		{[]string{"synth", "bogus"}, 2, `unknown command "bogus" for "svclab synth"`},
		{[]string{"synth", "shw"}, 2, "did you mean show?"},
		{[]string{"synth", "show"}, 2, "svclab: show takes 1 argument, got 0: give the spec file, e.g. svclab synth show experiments/synth-graph.toml"},
		{[]string{"synth", "import"}, 2, "import takes 1 argument, got 0: give the trace's CSV file"},
		{[]string{"synth", "show", "a.toml", "b.toml"}, 2, "got 2"},
		{[]string{"image", "extra"}, 2, "svclab: image: unknown command \"extra\" for \"svclab image\" (see 'svclab image --help')"},
		{[]string{"run"}, 2, "run takes 1 argument, got 0"},
		{[]string{"synth"}, 0, "Available Commands:"},
		{[]string{}, 0, "Available Commands:"},
	} {
		t.Run(strings.Join(append([]string{"svclab"}, tc.args...), " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stdout, stderr, code := svclab(t, ctx, nil, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tc.code, tc.want)
			}
		})
	}
}

// TestSynthImportInput: a trace that cannot be imported is bad input
// (exit 2) and leaves -o's file as it was; one that can replaces it, and
// says which services no request reaches.
func TestSynthImportInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "kept.toml")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	header := "timestamp,traceid,service,rpc_id,um,uminstanceid,rpctype,interface,dm,dminstanceid,rt\n"
	for _, tc := range []struct{ name, file, want string }{
		{"empty", write("empty.csv", ""), "no header line: the file is empty, or only comments"},
		{"header only", write("hdr.csv", header), "no row of calls that parses: 0 rows after the header"},
		{"no root call", write("noroot.csv", header+"1,T1,S,0.1.1,A,a,rpc,i,B,b,5\n"), "no complete trace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(out, []byte("keep\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, stderr, code := svclab(t, ctx, nil, "synth", "import", tc.file, "-o", out)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tc.want)
			}
			if b, _ := os.ReadFile(out); string(b) != "keep\n" {
				t.Errorf("-o's file after a failed import: %q, want it kept", b)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".kept.toml*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, stderr, code := svclab(t, ctx, nil, "synth", "import", "../../apps/synth/testdata/alibaba-2022-sample.csv", "--paths", "2", "-o", out)
	if code != 0 || !strings.Contains(stderr, "svclab synth import: notice: app.paths: no path calls ") {
		t.Fatalf("import of the sample: exit %d, stderr %q; want 0 and a notice of the services no path calls", code, stderr)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "[app.services.MS_10]") {
		t.Errorf("-o's file after the import:\n%s", b)
	}
	if _, stderr, code := svclab(t, ctx, nil, "synth", "import", "../../apps/synth/testdata/alibaba-2022-sample.csv", "--entry", "ZZ"); code != 2 ||
		!strings.Contains(stderr, "--entry ZZ: no complete trace has that entry (entries: MS_10, MS_90)") || !strings.Contains(stderr, "0 traces imported, 169 of other entries left out") {
		t.Errorf("--entry ZZ: exit %d, stderr %q", code, stderr)
	}
}

// TestPlanCompactAndSeed: plan shows one line per design point, the
// effective specs only with --effective, and when it drew the seed from
// the clock says so with a command that repeats the order, which does.
func TestPlanCompactAndSeed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const faults = "../../experiments/faults.toml"
	out, stderr, code := svclab(t, ctx, nil, "plan", faults)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.Contains(out, "# effective spec") {
		t.Errorf("plan without --effective prints effective specs:\n%s", out)
	}
	points := regexp.MustCompile(`(?m)^  ([1-4])  +(0|3)  +(0\.005|0\.02)  +(\d+,\d+,\d+)$`).FindAllStringSubmatch(out, -1)
	if len(points) != 4 {
		t.Errorf("want 4 design point lines (point, two levels, three runs each), got %d:\n%s", len(points), out)
	}
	if n := strings.Count(out, "\n"); n > 40 {
		t.Errorf("plan of %s is %d lines, want it compact:\n%s", faults, n, out)
	}
	m := regexp.MustCompile(`seed (\d+) was drawn from the clock, as experiment.seed is not set; svclab run draws its own, so to run this order: svclab run --seed (\d+) ` + regexp.QuoteMeta(faults)).FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Fatalf("plan does not say it drew its seed, and how to repeat the order:\n%s", out)
	}
	again, stderr, code := svclab(t, ctx, nil, "plan", "--seed", m[1], faults)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if runTable(again) != runTable(out) || runTable(out) == "" {
		t.Errorf("--seed %s does not repeat the order:\n%s\nthen:\n%s", m[1], runTable(out), runTable(again))
	}
	if strings.Contains(again, "drawn from the clock") {
		t.Errorf("plan --seed says the seed was drawn:\n%s", again)
	}
	full, stderr, code := svclab(t, ctx, nil, "plan", "--effective", "--seed", m[1], faults)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if n := strings.Count(full, "# effective spec: "); n != 4 || !strings.Contains(full, "[deploy.faults.reset]") {
		t.Errorf("--effective: %d effective specs, want 4:\n%s", n, full)
	}
	if _, stderr, code := svclab(t, ctx, nil, "plan", "--effective", "--brief", faults); code != 2 || !strings.Contains(stderr, "give one") {
		t.Errorf("--effective --brief: exit %d, %q; want 2", code, stderr)
	}
}

// runTable is the run order of plan's output: its lines from the runs'
// header on.
func runTable(out string) string {
	i := strings.Index(out, "\n#   run ")
	if i < 0 {
		return ""
	}
	return out[i:]
}

// TestRunWithoutAnalysis: an experiment whose analysis is not installed
// (no make venv) keeps its complete results and exits 0 with a notice
// that names the command that writes the report later, unless --report
// asked for the report. Its stderr, a pipe here as in CI, has a line per
// phase and the run's result line, with the run named by its ID.
func TestRunWithoutAnalysis(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("deploys a service")
	}
	dir := t.TempDir()
	// A copy of the binary, so that no .venv beside it or on PATH is
	// found, as on a machine where make venv was not run.
	bin := filepath.Join(dir, "bin", "svclab")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svclabBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	specPath := writeSpecFile(t, dir, "one.toml", "[app]\nname = \"chain\"\nhops = 2\n[load]\nrate = 50\nwarmup = \"300ms\"\nduration = \"1s\"\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"default", nil, 0, "notice: the results are complete, but the report was not written (svclab-analysis not found: run 'make venv'"},
		{"--report", []string{"--report"}, 1, "report: svclab-analysis not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			mark := marker(t)
			results := filepath.Join(dir, "results-"+strings.Trim(tc.name, "-"))
			var cmd *exec.Cmd
			var stdout, stderr strings.Builder
			var err error
			// The copy was just written: a process this test binary
			// forks meanwhile holds its descriptor until its exec, and
			// exec then fails with ETXTBSY (go.dev/issue/22315); it is
			// free again a moment later.
			for range 20 {
				cmd = exec.CommandContext(ctx, bin, append(append([]string{"run", "--results", results}, tc.args...), specPath)...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), mark, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SVCLAB_VENV="+filepath.Join(dir, "no-venv"))
				stdout.Reset()
				stderr.Reset()
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err = cmd.Start(); !errors.Is(err, syscall.ETXTBSY) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err == nil {
				err = cmd.Wait()
			}
			waitNoProcesses(t, mark, 5*time.Second)
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("exit %d (%v), want %d\n%s\n%s", code, err, tc.code, stdout.String(), stderr.String())
			}
			exps, _ := filepath.Glob(filepath.Join(results, "one-*"))
			if len(exps) != 1 {
				t.Fatalf("results %v\n%s", exps, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "svclab report "+exps[0]) {
				t.Errorf("stderr lacks %q and svclab report %s:\n%s", tc.want, exps[0], stderr.String())
			}
			if tc.code == 0 && !strings.Contains(stdout.String(), "results: "+exps[0]) {
				t.Errorf("stdout lacks the results directory:\n%s", stdout.String())
			}
			if m, _ := filepath.Glob(filepath.Join(exps[0], "runs", "*", "summary.json")); len(m) != 1 {
				t.Errorf("committed runs with a summary: %v, want 1", m)
			}
			log := stderr.String()
			id := regexp.MustCompile(`run 1/1 (r001-[0-9a-f]+) deploying`).FindStringSubmatch(log)
			if id == nil {
				t.Fatalf("no deploying line naming run 1/1 by ID:\n%s", log)
			}
			for _, want := range []string{
				"experiment one: 1 run, order random (seed ",
				"run 1/1 " + id[1] + " warm-up",
				"run 1/1 " + id[1] + " measuring ",
				"run 1/1 " + id[1] + ": ok | ",
			} {
				if !strings.Contains(log, want) {
					t.Errorf("stderr lacks %q:\n%s", want, log)
				}
			}
			if regexp.MustCompile(`: ok \| [1-9]\d* requests  [\d.]+ rps  \d+ err  p50 [\d.]+ ms  p99 [\d.]+ ms`).FindString(log) == "" {
				t.Errorf("the result line lacks the run's figures:\n%s", log)
			}
			if strings.Contains(log, "[]") {
				t.Errorf("stderr shows an empty level list:\n%s", log)
			}
		})
	}
}

// TestKubeRenderImageIsImageTag: without deploy.kube.image, the pods run
// the tag `svclab image --tarball` gives this version's image.
func TestKubeRenderImageIsImageTag(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// A small static stand-in for the binary: the image command checks
	// only that it is static, and a static svclab takes minutes to build.
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/stand\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "stand")
	build := exec.CommandContext(ctx, "go", "build", "-o", static, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in: %v\n%s", err, out)
	}
	tar := filepath.Join(dir, "svclab.tar")
	if _, stderr, code := svclab(t, ctx, nil, "image", "--tarball", tar, "--binary", static); code != 0 {
		t.Fatalf("svclab image: exit %d\n%s", code, stderr)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tar) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 {
		t.Fatalf("tarball manifest %+v, want one image with one tag", m)
	}
	tag := m[0].RepoTags[0]
	version, _, _ := svclab(t, ctx, nil, "--version")
	v, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(version), "svclab version "), " ")
	if !strings.HasPrefix(tag, "svclab:") || v == "" || !strings.HasSuffix(tag, ":"+v) {
		t.Errorf("svclab image tagged %q; want svclab:%s (from %q)", tag, v, version)
	}
	out, stderr, code := svclab(t, ctx, nil, "kube", "render", "--set", "load.rate=10", "../../experiments/chain.toml")
	if code != 0 {
		t.Fatalf("kube render: exit %d\n%s", code, stderr)
	}
	var images []string
	for _, doc := range strings.Split(out, "\n---\n") {
		if !strings.Contains(doc, "kind: Deployment") {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	if len(images) == 0 {
		t.Fatalf("no Deployment's container in:\n%s", out)
	}
	for _, img := range images {
		if img != tag {
			t.Errorf("kube render runs %q, svclab image tags %q", img, tag)
		}
	}
	if !strings.Contains(out, "deploy.kube.image is not set: the pods run \""+tag+"\"") {
		t.Errorf("the render's note does not name %s:\n%s", tag, out)
	}
}

func writeSpecFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAllSpecErrorsInOnePass: plan, run and up report every mistake of a
// spec at once, in file order, whichever stage finds it (the spec's own
// tables, the app's, the load's, each design point's), and a mistake that
// every design point shares once.
func TestAllSpecErrorsInOnePass(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	// Mistakes in four tables: [deploy] and [experiment] are the spec's,
	// [app] and [load] their owners'.
	four := writeSpecFile(t, dir, "four.toml", `[app]
name = "chain"
paylod = "small"

[deploy]
network = "udp"

[load]
rate = -5
duration = "1s"

[experiment]
order = "shuffled"
`)
	// Mistakes only a design point shows: both points share them.
	points := writeSpecFile(t, dir, "points.toml", `[app]
name = "chain"
hops = -1

[load]
rate = 10
duration = "1s"
mode = "sometimes"

[experiment.factors]
"deploy.transport" = ["grpc", "http"]
`)
	fourWant := []string{
		"four.toml:3: app.paylod: unknown key",
		"four.toml:6: deploy.network: must be",
		"four.toml:9: load.rate: must be > 0",
		"four.toml:13: experiment.order: must be",
	}
	pointsWant := []string{"points.toml:3: app.hops", "points.toml:8: load.mode"}
	tests := []struct {
		cmd  []string
		spec string
		want []string
	}{
		{[]string{"plan"}, four, fourWant},
		{[]string{"run", "--no-report", "--results", results}, four, fourWant},
		// up reads no [load]
		{[]string{"up"}, four, []string{fourWant[0], fourWant[1], fourWant[3]}},
		{[]string{"plan"}, points, pointsWant},
		{[]string{"run", "--no-report", "--results", results}, points, pointsWant},
	}
	for _, tc := range tests {
		t.Run(tc.cmd[0]+" "+filepath.Base(tc.spec), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, stderr, code := svclab(t, ctx, nil, append(append([]string{}, tc.cmd...), tc.spec)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, stderr)
			}
			at := 0
			for _, w := range tc.want {
				i := strings.Index(stderr[at:], w)
				if i < 0 {
					t.Fatalf("stderr lacks %q after the errors before it (want %q in this order):\n%s", w, tc.want, stderr)
				}
				if n := strings.Count(stderr, w); n != 1 {
					t.Errorf("%q said %d times, want once:\n%s", w, n, stderr)
				}
				at += i + len(w)
			}
			if tc.cmd[0] == "up" && strings.Contains(stderr, "load.rate") {
				t.Errorf("up reports [load], which it does not read:\n%s", stderr)
			}
		})
	}
}

// TestEveryRoundInOnePass: the mistakes that the checks after a spec's
// own tables find (the app's config and placement, the deployer's hosts,
// links and keys, this machine's commands, each design point) come in
// the same invocation as the spec's own, in file order, each once, for
// the exec app's programs and the built-in apps, under the local, netns
// and kube deployers. Each spec once took several invocations, one per
// stage that stopped at its first failure.
func TestEveryRoundInOnePass(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	tests := []struct {
		name, src string
		cmds      [][]string
		want      []string
	}{{
		// A new user's first spec of programs (docs/YOUR-SYSTEM.md).
		name: "exec.toml",
		src: `[app]
name = "exec"
entry = "frontend"
[app.components.frontend]
command = ["python3-nope", "frontend.py", "{listen}"]
protocol = "htp"
health = "/healthz"
calls = ["cart", "statik"]
start_timeout = "20"
[app.components.cart]
command = ["redis-server", "--port", "{port}"]
protocol = "tcp"
[deploy]
placement = "bogus"
replicaz = 3
[deploy.hosts.vm1]
cpus = 1
components = ["frontend", "nope"]
[load]
rate = 50
duration = "3s"
`,
		cmds: [][]string{{"plan"}, {"run", "--no-report", "--results", results}, {"up"}},
		want: []string{
			`exec.toml:5: app.components.frontend.command: command "python3-nope" not found`,
			`exec.toml:6: app.components.frontend.protocol: unknown protocol "htp"`,
			`exec.toml:8: app.components.frontend.calls: no component "statik"`,
			`exec.toml:9: app.components.frontend.start_timeout: needs a unit`,
			`exec.toml:14: deploy.placement: "bogus" would put programs together`,
			`exec.toml:15: deploy.replicaz: unknown key`,
			`exec.toml:16: deploy.hosts.vm1: the local deployer runs every group on this machine and has no hosts`,
			`exec.toml:18: deploy.hosts.vm1.components: unknown key`,
		},
	}, {
		name: "execnetns.toml",
		src: `[app]
name = "exec"
entry = "frontend"
[app.components.frontend]
command = ["python3-nope", "{listen}"]
protocol = "htp"
[app.components.cart]
command = ["redis-server", "--port", "{port}"]
protocol = "tcp"
[deploy]
deployer = "netns"
placement = "bogus"
[deploy.hosts.vm1]
groups = ["frontend", "nope"]
[deploy.link]
loss = 2
[load]
rate = 10
duration = "3s"
`,
		cmds: [][]string{{"plan"}, {"up"}},
		want: []string{
			`execnetns.toml:5: app.components.frontend.command: command "python3-nope" not found`,
			`execnetns.toml:6: app.components.frontend.protocol: unknown protocol "htp"`,
			`execnetns.toml:12: deploy.placement: "bogus" would put programs together`,
			`execnetns.toml:14: deploy.hosts.vm1.groups: placement split has no group "nope"`,
			`execnetns.toml:16: deploy.link.loss: must be a fraction`,
		},
	}, {
		name: "synth.toml",
		src: `[app]
name = "synth"
entry = "gateway"
[app.services.gateway]
response = "2KiB"
calls = [{ to = "catalog" }, { to = "cartt" }]
[app.services.catalog]
response = "8KiB"
[app.services.cart]
response = "1KiB"
[deploy]
placement = "split"
replicaz = 2
[deploy.kube]
generators = 0
[load]
rate = "fast"
duration = "3s"
[experiment]
ordr = "random"
`,
		cmds: [][]string{{"plan"}, {"run", "--no-report", "--results", results}},
		want: []string{
			`synth.toml:6: app.services.gateway.calls[1].to: unknown service "cartt"`,
			`synth.toml:13: deploy.replicaz: unknown key`,
			`synth.toml:15: deploy.kube.generators: must be a number of load pods`,
			`synth.toml:17: load.rate: must be a number`,
			`synth.toml:20: experiment.ordr: unknown key`,
		},
	}, {
		// A new user's synth spec of every kind of mistake (apps/synth's
		// own test reads it too): the values that do not parse and the
		// unknown keys, the graph's errors and its cycles once took
		// three invocations.
		name: "synthall.toml",
		src: func() string {
			b, err := os.ReadFile("../../apps/synth/testdata/every-mistake.toml")
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}(),
		cmds: [][]string{{"plan"}, {"up"}},
		want: []string{
			`synthall.toml:9: app.services.gateway.work.cpu: needs a unit`,
			`synthall.toml:10: app.services.gateway.response: must be 0 or at least 2 bytes`,
			`synthall.toml:12: app.services.gateway.calls[0].to: unknown service "catalgo"`,
			`synthall.toml:13: app.services.gateway.calls[1].probabilty: unknown key`,
			`synthall.toml:14: app.services.gateway.calls[2].probability: must be between 0 and 1, got 1.5`,
			`synthall.toml:15: app.services.gateway.calls[3].count: must be between 0 and 1000, got -1`,
			`synthall.toml:17: app.services.gateway.mode: must be "sequential" or "parallel", got "paralel"`,
			`synthall.toml:20: app.services.catalog.work.cpu: not a duration`,
			`synthall.toml:20: app.services.catalog.work.sleep: "exp(2ms": a distribution is name(arguments)`,
			`synthall.toml:21: app.services.catalog.respnse: unknown key`,
			`synthall.toml:22: app.services.catalog.calls[0].to: calls "gateway", which closes a cycle (gateway → catalog → gateway)`,
			`synthall.toml:25: app.services.cart.work.memory: "gamma(1KiB)": unknown distribution "gamma"`,
			`synthall.toml:25: app.services.cart.work.sleep: must not be negative`,
			`synthall.toml:26: app.services.cart.response: "uniform(3KiB, 1KiB)": max is below min`,
			`synthall.toml:27: app.services.cart.calls[0].to: calls "cart", which closes a cycle (cart → cart)`,
			`synthall.toml:30: app.services.extra.work.cpu: "lognormal(2ms)": lognormal takes 2 arguments`,
		},
	}, {
		name: "chainnetns.toml",
		src: `[app]
name = "chain"
hops = 3
[deploy]
deployer = "netns"
transport = "grpcc"
placement = "split"
[deploy.hosts.vm1]
groups = ["hop1", "hop9"]
cpus = "two"
[deploy.hosts.vm2]
groups = ["hop2", "hop3"]
[deploy.link]
latency = "1ms"
jitter = "5ms"
loss = 2
[deploy.resources.hop7]
cpu = 1
[load]
rate = 10
duraton = "3s"
`,
		cmds: [][]string{{"plan"}},
		want: []string{
			`chainnetns.toml:6: deploy.transport: unknown transport "grpcc"`,
			`chainnetns.toml:9: deploy.hosts.vm1.groups: placement split has no group "hop9"`,
			`chainnetns.toml:10: deploy.hosts.vm1.cpus: must be a whole number`,
			`chainnetns.toml:15: deploy.link.jitter: must not exceed latency`,
			`chainnetns.toml:16: deploy.link.loss: must be a fraction`,
			`chainnetns.toml:17: deploy.resources.hop7: "hop7" is no group`,
			`chainnetns.toml:21: load.duraton: unknown key`,
		},
	}, {
		name: "chainkube.toml",
		src: `[app]
name = "chain"
hops = 3
[deploy]
deployer = "kube"
placement = "split"
[deploy.kube]
namespace = "Bad_NS"
generators = 0
[deploy.hosts.vm1]
groups = ["hop1", "hop9"]
[deploy.faults.kill]
target = "hop2"
start = "1s"
[deploy.replicas]
hop1 = 5000000000
hop8 = 2
[load]
rate = 10
duration = "3s"
`,
		cmds: [][]string{{"plan"}},
		want: []string{
			`chainkube.toml:8: deploy.kube.namespace: not a Kubernetes namespace name`,
			`chainkube.toml:9: deploy.kube.generators: must be a number of load pods`,
			`chainkube.toml:11: deploy.hosts.vm1.groups: placement split has no group "hop9"`,
			`chainkube.toml:12: deploy.faults.kill: the kube deployer cannot inject faults`,
			`chainkube.toml:16: deploy.replicas.hop1: must be at most 2147483647`,
			`chainkube.toml:17: deploy.replicas.hop8: no group or component "hop8"`,
		},
	}, {
		// Mistakes of [deploy] and [experiment], and those each design
		// point shows at its level of a factor.
		name: "factors.toml",
		src: `[app]
name = "chain"
hops = 3
[deploy]
transport = "grpcc"
[deploy.resources.nowhere]
cpus = 1
[load]
rate = 10
duration = "3s"
[experiment]
repetitions = 0
ordr = "random"
[experiment.factors]
"deploy.placement" = ["monolith", "split"]
"load.rat" = [1, 2]
`,
		cmds: [][]string{{"plan"}, {"run", "--no-report", "--results", results}},
		want: []string{
			`factors.toml:5: deploy.transport: unknown transport "grpcc"`,
			`factors.toml:6: deploy.resources.nowhere: "nowhere" is no group of placement "monolith"`,
			`factors.toml:6: deploy.resources.nowhere: "nowhere" is no group of placement "split"`,
			`factors.toml:7: deploy.resources.nowhere.cpus: unknown key`,
			`factors.toml:12: experiment.repetitions: must be between 1 and 10000`,
			`factors.toml:13: experiment.ordr: unknown key`,
			`factors.toml:16: experiment.factors."load.rat": unknown key`,
		},
	}, {
		// Tables that a spec does not have, beside the mistakes of
		// those it has.
		name: "tables.toml",
		src: `[app]
name = "chain"
hopz = 2
[deploy]
transport = "grpcc"
[lod]
rate = 1
[experimnt]
x = 1
[load]
rate = 10
duration = "3s"
`,
		cmds: [][]string{{"plan"}, {"up"}},
		want: []string{
			`tables.toml:3: app.hopz: unknown key`,
			`tables.toml:5: deploy.transport: unknown transport "grpcc"`,
			`tables.toml:6: lod: unknown table`,
			`tables.toml:8: experimnt: unknown table`,
		},
	}, {
		// Every way a placement's groups are wrong, and each
		// language's mistake.
		name: "groups.toml",
		src: `[app]
name = "chain"
hops = 3
[deploy]
placement = "two"
[deploy.placements]
two = [["hop1", "hop9"], ["hop2", "hop8", "hop3"]]
three = [["hop1"], ["hop2", "hop2"], ["hop3"]]
[load]
rate = 10
duration = "3s"
[experiment.factors]
"deploy.placement" = ["two", "three", "split"]
"deploy.languages" = [{ hop1 = "cobol", hop2 = "rust" }, {}]
`,
		cmds: [][]string{{"plan"}},
		want: []string{
			`groups.toml:7: deploy.placements.two: unknown component "hop9"`,
			`groups.toml:7: deploy.placements.two: unknown component "hop8"`,
			`groups.toml:8: deploy.placements.three: component "hop2" is listed twice in group 2`,
			`groups.toml:14: deploy.languages.hop1: unknown language "cobol"`,
			`groups.toml:14: deploy.languages.hop2: unknown language "rust"`,
		},
	}, {
		// An unknown deployer hides none of the app's mistakes, and is
		// said once.
		name: "deployer.toml",
		src: `[app]
name = "exec"
entry = "frontend"
[app.components.frontend]
command = ["./frontend", "{listen}"]
protocol = "htp"
[deploy]
deployer = "moon"
placement = "bogus"
[load]
rate = 10
duration = "3s"
`,
		cmds: [][]string{{"plan"}, {"up"}},
		want: []string{
			`deployer.toml:6: app.components.frontend.protocol: unknown protocol "htp"`,
			`deployer.toml:8: deploy.deployer: unknown deployer "moon"`,
			`deployer.toml:9: deploy.placement: "bogus" would put programs together`,
		},
	}, {
		// Every --set flag's mistake, before the file's.
		name: "flags.toml",
		src: `[app]
name = "chain"
[load]
rate = 10
duration = "3s"
`,
		cmds: [][]string{{"plan", "--set", "lod.rate=3", "--set", "load=3", "--set", "app.hops"}},
		want: []string{
			`--set lod.rate=3: lod: unknown table`,
			`--set "load=3": name a key inside a table`,
			`--set "app.hops": write key=value`,
		},
	}, {
		// A fault's time is checked against the load's beside the
		// mistakes of [deploy] and of the other faults.
		name: "faults.toml",
		src: `[app]
name = "chain"
hops = 3
[deploy]
transport = "grpcc"
placement = "split"
[deploy.faults.kill]
target = "hop9"
start = "1s"
[deploy.faults.latency_spike]
target = "hop2"
start = "1s"
duration = "-1s"
[deploy.faults.reset]
target = "hop2"
start = "100s"
duration = "1s"
fraction = 0.5
[load]
rate = 10
duration = "3s"
`,
		cmds: [][]string{{"plan"}, {"run", "--no-report", "--results", results}},
		want: []string{
			`faults.toml:5: deploy.transport: unknown transport "grpcc"`,
			`faults.toml:8: deploy.faults.kill.target: no group or component "hop9"`,
			`faults.toml:13: deploy.faults.latency_spike.duration: must not be negative`,
			`faults.toml:16: deploy.faults.reset.start: 1m40s is not before the end of the measurement`,
		},
	}, {
		// A load target on another machine, refused unless
		// --allow-remote, with the mistakes of the deployment.
		name: "remote.toml",
		src: `[app]
name = "chain"
[deploy]
transport = "grpcc"
[load]
rate = 10
duration = "3s"
target = "http://10.1.2.3:8080"
`,
		cmds: [][]string{{"plan"}, {"run", "--no-report", "--results", results}},
		want: []string{
			`remote.toml:4: deploy.transport: unknown transport "grpcc"`,
			`remote.toml:8: load.target: target "http://10.1.2.3:8080" is not on this machine`,
		},
	}, {
		name: "remotedeploy.toml",
		src: `[app]
name = "chain"
[deploy]
transport = "grpcc"
replicaz = 2
[load]
rate = 10
duration = "3s"
target = "http://10.1.2.3:8080"
`,
		cmds: [][]string{{"plan"}, {"run", "--no-report", "--results", results}},
		want: []string{
			`remotedeploy.toml:4: deploy.transport: unknown transport "grpcc"`,
			`remotedeploy.toml:5: deploy.replicaz: unknown key`,
			`remotedeploy.toml:9: load.target: target "http://10.1.2.3:8080" is not on this machine`,
		},
	}}
	for _, tc := range tests {
		path := writeSpecFile(t, dir, tc.name, tc.src)
		for _, cmd := range tc.cmds {
			t.Run(cmd[0]+" "+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, stderr, code := svclab(t, ctx, nil, append(append([]string{}, cmd...), path)...)
				if code != 2 {
					t.Fatalf("exit %d, want 2\n%s", code, stderr)
				}
				at := 0
				for _, w := range tc.want {
					i := strings.Index(stderr[at:], w)
					if i < 0 {
						t.Fatalf("stderr lacks %q after the errors before it (want %q in this order):\n%s", w, tc.want, stderr)
					}
					at += i + len(w)
				}
				// One error a line.
				if n := len(strings.Split(strings.TrimSpace(stderr), "\n")); n != len(tc.want) {
					t.Errorf("%d errors, want %d:\n%s", n, len(tc.want), stderr)
				}
			})
		}
	}
}
