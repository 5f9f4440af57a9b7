package archtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/svclab/svclab/"

var update = flag.Bool("update", false, "rewrite godeps.txt from the current package graph")

// layers orders svclab's parts from the top (the CLI) down. A package may
// import a package of a lower layer, or one of its own part; never one of
// its own layer's other parts or of a higher layer. The spec package is the
// language every stage reads, so it sits at the bottom and imports nothing
// of svclab. The public packages sit each above what they expose: svc/cli
// (the whole CLI as a library) above internal/cli (its commands), svc (the
// app API) between the apps and internal/runtime, and svc/svcimpl (what
// generated code calls) between the generated proto packages, which
// register inproc methods through it, and the transports.
var layers = [][]string{
	{"cmd/", "internal/archtest", "internal/conformance"},
	{"svc/cli"},
	{"internal/cli"},
	{"internal/experiment", "internal/capacity"},
	{"internal/deploy"},
	{"apps/"},
	{"svc"},
	{"internal/runtime", "internal/load"},
	{"proto/"},
	{"svc/svcimpl"},
	{"internal/runtime/transport"},
	{"internal/cgroup"},
	{"internal/spec", "internal/inprocgen", "internal/jsongen", "internal/registry", "internal/tempdir", "internal/pki", "internal/hostclock", "internal/autoscale", "internal/image", "internal/warn", "internal/live"},
	{"internal/english", "internal/procgroup"},
}

// part returns the layer index and the part (the prefix of layers that
// owns pkg, the longest one winning, so internal/runtime/transport is not
// part of internal/runtime).
func part(pkg string) (int, string) {
	best, bestLayer := "", -1
	for i, l := range layers {
		for _, p := range l {
			if (pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/")) && len(p) > len(best) {
				best, bestLayer = p, i
			}
		}
	}
	return bestLayer, best
}

// onlyFromCmd are packages only the CLI (cmd/ and internal/cli, its
// commands) wires in, directly or through the deploy/all registration
// package: everything else chooses a deployer by name through
// internal/deploy.
var onlyFromCmd = []string{"internal/deploy/local"}

// cli are the packages of the CLI itself.
var cli = []string{"cmd/", "internal/cli"}

// wiring packages exist to register implementations for cmd/.
var wiring = []string{"internal/deploy/all"}

type pkg struct {
	ImportPath string
	Imports    []string
}

// goList runs `go list args...` at the repository's root.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	// go test puts its own GOROOT/bin first on the test's PATH;
	// runtime.GOROOT is empty in a -trimpath build, which make test uses.
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	return out
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(goList(t, "-json=ImportPath,Imports", "./...")))
	var pkgs []pkg
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return pkgs
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", dir, err)
	}
	return dir
}

// render writes the graph as Service Weaver's godeps.txt does: each
// package, then its direct imports (standard library, third party and
// svclab's own) indented below it.
func render(pkgs []pkg) []byte {
	var b bytes.Buffer
	for _, p := range pkgs {
		b.WriteString(p.ImportPath + "\n")
		for _, im := range p.Imports {
			b.WriteString("\t" + im + "\n")
		}
	}
	return b.Bytes()
}

func TestGoDeps(t *testing.T) {
	checkFile(t, "godeps.txt", render(listPackages(t)), "the package graph", "", diff)
}

// checkFile compares got with the committed file name at the repository's
// root, or writes it with -update. what names its content in the error,
// run the test that writes it (empty: every test), and show the change.
func checkFile(t *testing.T, name string, got []byte, what, run string, show func(want, got []byte) string) {
	t.Helper()
	path := filepath.Join(repoRoot(t), name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	cmd := "go test ./internal/archtest -update"
	if run != "" {
		cmd = "go test ./internal/archtest -run " + run + " -update"
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (create it with: %s)", path, err, cmd)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed; review the change and run `%s`:\n%s", what, cmd, show(want, got))
	}
}

func TestLayers(t *testing.T) {
	for _, p := range listPackages(t) {
		from, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		fl, fp := part(from)
		if fl < 0 {
			t.Errorf("%s belongs to no layer; add its part to layers in archtest_test.go", from)
			continue
		}
		for _, im := range p.Imports {
			to, ok := strings.CutPrefix(im, module)
			if !ok {
				continue
			}
			for _, oc := range onlyFromCmd {
				if (to == oc || strings.HasPrefix(to, oc+"/")) && !inCLI(from) && !strings.HasPrefix(from, oc) && !slices.Contains(wiring, from) {
					t.Errorf("%s imports %s, which only cmd/ may wire in", from, to)
				}
			}
			tl, tp := part(to)
			if tp == fp {
				continue // within one part
			}
			if tl <= fl {
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s): imports go only downward", from, fl, fp, to, tl, tp)
			}
		}
	}
}

// inCLI reports whether pkg is a package of the CLI.
func inCLI(pkg string) bool {
	return slices.ContainsFunc(cli, func(p string) bool { return pkg == p || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") })
}

// appsMayImport are the packages of svclab the reference apps' code (tests
// aside) may import: the public app API and their own protobuf packages,
// as an app outside the module would. They are its first users, so that
// what they need is in it.
var appsMayImport = []string{"svc", "proto/", "apps/"}

func TestAppsUsePublicAPI(t *testing.T) {
	n := 0
	for _, p := range listPackages(t) {
		from, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok || !strings.HasPrefix(from, "apps/") {
			continue
		}
		n++
		for _, im := range p.Imports {
			to, ok := strings.CutPrefix(im, module)
			if !ok {
				continue
			}
			if !slices.ContainsFunc(appsMayImport, func(a string) bool { return to == a || strings.HasPrefix(to, a) && strings.HasSuffix(a, "/") }) {
				t.Errorf("%s imports %s: an app uses only the public API (svc) and protobuf packages", from, to)
			}
		}
	}
	if n == 0 {
		t.Fatal("no package under apps/: the check checked nothing")
	}
}

func TestPart(t *testing.T) {
	for _, c := range []struct {
		pkg   string
		layer int
		part  string
	}{
		{"cmd/svclab", 0, "cmd/"},
		{"svc/cli", 1, "svc/cli"},
		{"internal/cli", 2, "internal/cli"},
		{"internal/deploy/local", 4, "internal/deploy"},
		{"svc", 6, "svc"},
		{"internal/runtime", 7, "internal/runtime"},
		{"internal/runtime/balancer", 7, "internal/runtime"},
		{"svc/svcimpl", 9, "svc/svcimpl"},
		{"internal/runtime/transport/inproc", 10, "internal/runtime/transport"},
		{"internal/spec", 12, "internal/spec"},
		{"internal/runtimex", -1, ""},
		{"svcx", -1, ""},
	} {
		l, p := part(c.pkg)
		if l != c.layer || p != c.part {
			t.Errorf("part(%q) = %d, %q; want %d, %q", c.pkg, l, p, c.layer, c.part)
		}
	}
}

// diff names, package by package, the imports added and removed, which is
// what a reviewer of a graph change needs to see.
func diff(want, got []byte) string {
	w, g := parse(want), parse(got)
	var s strings.Builder
	for _, p := range slices.Sorted(maps.Keys(joinKeys(w, g))) {
		for _, im := range g[p] {
			if !slices.Contains(w[p], im) {
				fmt.Fprintf(&s, "%s: + %s\n", p, im)
			}
		}
		for _, im := range w[p] {
			if !slices.Contains(g[p], im) {
				fmt.Fprintf(&s, "%s: - %s\n", p, im)
			}
		}
		if _, ok := w[p]; !ok {
			fmt.Fprintf(&s, "%s: new package\n", p)
		} else if _, ok := g[p]; !ok {
			fmt.Fprintf(&s, "%s: package removed\n", p)
		}
	}
	return s.String()
}

// parse reads godeps.txt's form back into package → imports.
func parse(b []byte) map[string][]string {
	m := map[string][]string{}
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		if im, ok := strings.CutPrefix(l, "\t"); ok {
			m[cur] = append(m[cur], im)
		} else if l != "" {
			cur = l
			m[cur] = nil
		}
	}
	return m
}

func joinKeys(a, b map[string][]string) map[string]bool {
	k := map[string]bool{}
	for p := range a {
		k[p] = true
	}
	for p := range b {
		k[p] = true
	}
	return k
}

// TestLeanHost: the lean host binary (cmd/svclab-host) links every app and
// transport a host may run and none of what only the rest of svclab uses,
// whose package init and code make a host hold twice the memory
// (docs/PERFORMANCE.md, "Synth topologies at scale").
func TestLeanHost(t *testing.T) {
	deps := strings.Fields(string(goList(t, "-deps", "./cmd/svclab-host")))
	for _, want := range []string{"apps/all", "internal/runtime/transport/all", "internal/deploy/hostentry"} {
		if !slices.Contains(deps, module+want) {
			t.Errorf("cmd/svclab-host does not link %s", want)
		}
	}
	heavy := []string{
		"k8s.io/", "sigs.k8s.io/", "github.com/parquet-go/", "github.com/spf13/cobra", "github.com/google/go-containerregistry/",
		module + "internal/cli", module + "svc/cli", module + "internal/experiment", module + "internal/load", module + "internal/capacity",
		module + "internal/deploy/", // the deployers; hostentry aside
	}
	for _, d := range deps {
		if d == module+"internal/deploy/hostentry" {
			continue
		}
		for _, h := range heavy {
			if d == strings.TrimSuffix(h, "/") || strings.HasPrefix(d, strings.TrimSuffix(h, "/")+"/") {
				t.Errorf("cmd/svclab-host links %s", d)
			}
		}
	}
}
