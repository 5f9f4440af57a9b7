package hostentry

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// copyFile copies src to dst with mode perm.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, perm); err != nil {
		t.Fatal(err)
	}
}

// TestCommand: a deployer starts the lean host binary beside the svclab
// binary only when it was built from the same source, and no older (a
// test binary has no version control stamp, so the age decides); in any
// other case the binary itself with "host".
func TestCommand(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gofmt, err := exec.LookPath("gofmt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// host makes exe+"-host" in the test's directory, or nothing.
		host     func(t *testing.T, exe string)
		wantLean bool
	}{
		{name: "none", host: func(*testing.T, string) {}},
		{name: "same build", host: func(t *testing.T, exe string) { copyFile(t, self, exe+LeanSuffix, 0o755) }, wantLean: true},
		{name: "not executable", host: func(t *testing.T, exe string) { copyFile(t, self, exe+LeanSuffix, 0o644) }},
		{name: "older", host: func(t *testing.T, exe string) {
			copyFile(t, self, exe+LeanSuffix, 0o755)
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(exe+LeanSuffix, old, old); err != nil {
				t.Fatal(err)
			}
		}},
		// go install ./cmd/... links both at once; the smaller host binary
		// was once written 24 s before svclab.
		{name: "linked with it", host: func(t *testing.T, exe string) {
			copyFile(t, self, exe+LeanSuffix, 0o755)
			early := time.Now().Add(-30 * time.Second)
			if err := os.Chtimes(exe+LeanSuffix, early, early); err != nil {
				t.Fatal(err)
			}
		}, wantLean: true},
		{name: "another program", host: func(t *testing.T, exe string) { copyFile(t, gofmt, exe+LeanSuffix, 0o755) }},
		{name: "not a Go binary", host: func(t *testing.T, exe string) {
			if err := os.WriteFile(exe+LeanSuffix, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a directory", host: func(t *testing.T, exe string) {
			if err := os.Mkdir(exe+LeanSuffix, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe := filepath.Join(t.TempDir(), "svclab")
			copyFile(t, self, exe, 0o755)
			tc.host(t, exe)
			path, args := Command(exe)
			desc := Describe(exe)
			if want := "hosts: " + path; tc.wantLean != (desc == want) {
				t.Errorf("Describe = %q; the lean binary chosen: %v", desc, tc.wantLean)
			}
			if !tc.wantLean && !strings.Contains(desc, "make build") {
				t.Errorf("Describe = %q, which does not say how to build the host binary", desc)
			}
			if tc.wantLean {
				if path != exe+LeanSuffix || len(args) != 0 {
					t.Errorf("Command = %s %q, want %s and no arguments", path, args, exe+LeanSuffix)
				}
				return
			}
			if path != exe || !slices.Equal(args, []string{"host"}) {
				t.Errorf("Command = %s %q, want %s host", path, args, exe)
			}
		})
	}
}

// TestDescribeOwnModule: a binary of the user's own module has no lean
// host binary to build, and Describe does not tell its user to build one;
// svclab's own (this test binary) does.
func TestDescribeOwnModule(t *testing.T) {
	if bi, ok := debug.ReadBuildInfo(); !ok || bi.Main.Path != svclabModule {
		t.Fatalf("this test binary's module is not %s: %+v", svclabModule, bi)
	}
	own := filepath.Join(t.TempDir(), "orderslab")
	mod := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module example.com/orders\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", own, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if d := Describe(own); strings.Contains(d, "make build") || !strings.Contains(d, "your own module") {
		t.Errorf("Describe(own module's binary) = %q", d)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "svclab")
	copyFile(t, self, exe, 0o755)
	if d := Describe(exe); !strings.Contains(d, "make build") {
		t.Errorf("Describe(svclab without its host binary) = %q", d)
	}
}

// TestMainErr: the lean binary's flags are those of `svclab host`, and
// it refuses what `svclab host` refuses before it runs anything.
func TestMainErr(t *testing.T) {
	enc, err := runtime.EncodeHostConfig(&hostv1.HostConfig{Group: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "g1.json")
	if err := os.WriteFile(cfgFile, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(runtime.HostConfigEnv, "")
	os.Unsetenv(runtime.HostConfigEnv)
	for _, tc := range []struct {
		name    string
		args    []string
		wantIs  error
		wantErr string
	}{
		{name: "no config", args: []string{"--deployment", "d1", "--group", "g1"}, wantIs: ErrNoConfig},
		{name: "unknown flag", args: []string{"--nope"}, wantIs: errUsage, wantErr: "-nope"},
		{name: "argument", args: []string{"--config", cfgFile, "extra"}, wantIs: errUsage, wantErr: `"extra"`},
		{name: "as svclab host", args: []string{"host", "--config", cfgFile, "--group", "g2"}, wantErr: "--group g2 does not match the config's group g1"},
		{name: "group differs", args: []string{"--config", cfgFile, "--group", "g2"}, wantErr: "--group g2 does not match the config's group g1"},
		{name: "help", args: []string{"-h"}, wantIs: flag.ErrHelp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := mainErr(context.Background(), tc.args, &stderr)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v, want one that is %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	var stderr bytes.Buffer
	_ = mainErr(context.Background(), []string{"-h"}, &stderr)
	for _, f := range []string{"-config", "-deployment", "-group"} {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("usage lacks %s:\n%s", f, stderr.String())
		}
	}
}

// TestExecLean: `svclab host` (here a copy of the test binary named
// svclab) hands over to the host binary beside it, with the arguments it
// is given and its environment; the host binary, with none beside it,
// runs on.
func TestExecLean(t *testing.T) {
	if os.Getenv("HOSTENTRY_TEST_EXEC") == "1" {
		if err := ExecLean([]string{"-test.run=^TestExecLean$"}); err != nil {
			fmt.Println(err)
		}
		exe, _ := os.Executable()
		fmt.Println("running", exe)
		os.Exit(0)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		withHost bool
		want     string
	}{
		{"host binary beside", true, "svclab-host"},
		{"none beside", false, "svclab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, self, filepath.Join(dir, "svclab"), 0o755)
			if tc.withHost {
				copyFile(t, self, filepath.Join(dir, "svclab-host"), 0o755)
			}
			cmd := exec.Command(filepath.Join(dir, "svclab"), "-test.run=^TestExecLean$")
			cmd.Env = append(os.Environ(), "HOSTENTRY_TEST_EXEC=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if want := "running " + filepath.Join(dir, tc.want) + "\n"; string(out) != want {
				t.Errorf("output %q, want %q", out, want)
			}
		})
	}
}
