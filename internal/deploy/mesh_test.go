package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// TestTracingNeedsJaeger checks that deploy.tracing without a Jaeger to run
// fails in Resolve, before anything starts, naming the key and its line.
func TestTracingNeedsJaeger(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "jaeger")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "[app]\nname = \"chain\"\n[deploy]\ndeployer = \"test-a\"\n\ntracing = 0.5\n"
	for _, bin := range []string{filepath.Join(dir, "missing"), notExec, dir} {
		t.Setenv(deploy.JaegerEnv, bin)
		s, err := spec.Parse("x.toml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = deploy.Resolve(s)
		if err == nil || !strings.Contains(err.Error(), "x.toml:6: deploy.tracing: tracing needs Jaeger") || !strings.Contains(err.Error(), bin) {
			t.Errorf("%s: %v", bin, err)
		}
	}
	// Off, nothing is needed.
	s, err := spec.Parse("x.toml", []byte("[app]\nname = \"chain\"\n[deploy]\ndeployer = \"test-a\"\ntracing = 0.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := deploy.Resolve(s); err != nil {
		t.Errorf("tracing = 0: %v", err)
	}
}
