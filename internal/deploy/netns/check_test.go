package netns_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// TestBadInput checks that every mistake in machines and links is one error,
// naming the file, the line and the key, found by deploy.Resolve (before
// anything starts, and without root).
func TestBadInput(t *testing.T) {
	head := "[app]\nname = \"chain\"\nhops = 2\n[deploy]\ndeployer = \"netns\"\nplacement = \"split\"\n"
	ok := "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\n"
	for _, tc := range []struct {
		name, body string
		key        string
		line       int
		msg        string
		// deploy is a line added to [deploy], at line 7.
		deploy string
	}{
		{"group on two machines", "[deploy.hosts.vm1]\ngroups = [\"hop1\", \"hop2\"]\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\n",
			"deploy.hosts.vm2.groups", 10, "on two machines", ""},
		{"group on no machine", "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\n",
			"deploy.placement", 6, "group \"hop2\" of placement split is on no machine", ""},
		{"unknown group", "[deploy.hosts.vm1]\ngroups = [\"hop1\", \"hop9\"]\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\n",
			"deploy.hosts.vm1.groups", 8, "no group \"hop9\"", ""},
		{"no machines", "", "deploy.deployer", 5, "needs machines", ""},
		{"unknown machine in links", ok + "[deploy.links.\"vm1-vm3\"]\nlatency = \"1ms\"\n",
			"deploy.links.vm1-vm3", 11, "names no pair of machines", ""},
		{"negative latency", ok + "[deploy.link]\nlatency = \"-1ms\"\n",
			"deploy.link.latency", 12, "must not be negative", ""},
		{"negative latency of a pair", ok + "[deploy.links.\"vm1-vm2\"]\nlatency = \"-2ms\"\n",
			"deploy.links.vm1-vm2.latency", 12, "must not be negative", ""},
		{"loss of one", ok + "[deploy.link]\nloss = 1.0\n", "deploy.link.loss", 12, "[0, 1)", ""},
		{"negative loss", ok + "[deploy.links.\"vm2-vm1\"]\nloss = -0.1\n", "deploy.links.vm2-vm1.loss", 12, "[0, 1)", ""},
		{"jitter over latency", ok + "[deploy.link]\nlatency = \"1ms\"\njitter = \"2ms\"\n", "deploy.link.jitter", 13, "must not exceed latency", ""},
		{"bad bandwidth", ok + "[deploy.link]\nbandwidth = \"fast\"\n", "deploy.link.bandwidth", 12, "not a bandwidth", ""},
		{"too many cpus", fmt.Sprintf("[deploy.hosts.vm1]\ngroups = [\"hop1\"]\ncpus = %d\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\n", goruntime.NumCPU()+1),
			"deploy.hosts.vm1.cpus", 9, "this machine has", ""},
		{"exclusive without cpus", "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\nexclusive = true\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\n",
			"deploy.hosts.vm1.exclusive", 9, "no cores of its own", ""},
		{"exclusive machines sharing cores", fmt.Sprintf("[deploy.hosts.vm1]\ngroups = [\"hop1\"]\ncpus = %d\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\ncpus = 1\nexclusive = true\n", goruntime.NumCPU()),
			"deploy.hosts.vm2.exclusive", 13, "some must share", ""},
		{"memory below the least", "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\nmemory = \"1MiB\"\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\n",
			"deploy.hosts.vm1.memory", 9, "must be at least 8MiB", ""},
		{"unix sockets", "[deploy.hosts.vm1]\ngroups = [\"hop1\", \"hop2\"]\n", "deploy.network", 7, "over TCP", `network = "unix"`},
		{"sidecars", ok, "deploy.sidecar", 7, "does not run sidecars", `sidecar = "envoy"`},
		{"mtls", ok, "deploy.mtls", 7, "does not run mesh features", "mtls = true"},
		{"tracing", ok, "deploy.tracing", 7, "does not run mesh features", "tracing = 0.5"},
		{"metrics", ok, "deploy.metrics", 7, "does not run mesh features", "metrics = true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := head + tc.body
			if tc.deploy != "" {
				src = strings.Replace(src, "placement = \"split\"\n", "placement = \"split\"\n"+tc.deploy+"\n", 1)
			}
			path := filepath.Join(t.TempDir(), "spec.toml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := spec.Load(path)
			if err == nil {
				_, _, err = deploy.Resolve(s)
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want a *spec.Error", err, err)
			}
			if se.Key != tc.key || se.Line != tc.line || se.File != path || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %q at key %s line %d; want key %s line %d containing %q", err, se.Key, se.Line, tc.key, tc.line, tc.msg)
			}
			if n := len(spec.Unjoin(err)); n != 1 {
				t.Errorf("%d errors, want one", n)
			}
		})
	}
}

// TestBadInputAllAtOnce: a spec's mistakes in its machines and links come
// together, each at its key, so that one pass fixes them.
func TestBadInputAllAtOnce(t *testing.T) {
	src := "[app]\nname = \"chain\"\nhops = 2\n[deploy]\ndeployer = \"netns\"\nplacement = \"split\"\n" +
		"[deploy.hosts.vm1]\ngroups = [\"hop1\", \"hop9\"]\n[deploy.hosts.vm2]\ngroups = [\"hop2\"]\ncpus = -1\n[deploy.link]\nloss = 1.0\n"
	s, err := spec.Parse("spec.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = deploy.Resolve(s)
	want := []string{
		`spec.toml:8: deploy.hosts.vm1.groups: placement split has no group "hop9"`,
		`spec.toml:11: deploy.hosts.vm2.cpus: must not be negative, got -1`,
		`spec.toml:13: deploy.link.loss: must be a fraction in [0, 1), got 1`,
	}
	errs := spec.Unjoin(err)
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, e := range errs {
		if !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("error %d = %q, want %q…", i, e, want[i])
		}
	}
}
