package langhost

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
)

// TestCommands: a Python component's host is the virtualenv's python of
// the tree ImplDirEnv names, once per language; a tree without the build
// is an *Error naming the key, the artifact and the make target.
func TestCommands(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
	built := t.TempDir()
	venv := filepath.Join(built, "impl", "python", ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(venv, "python"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	topo := &runtime.Topology{Languages: map[string]string{"a": runtime.LangPython, "b": runtime.LangPython}}
	for _, tc := range []struct {
		name, tree string
		want       []string // the command, or what the error says
	}{
		{"built", built, []string{filepath.Join(venv, "python"), "-m", "svclab_impl"}},
		{"not built", t.TempDir(), []string{`deploy.languages.a = "python"`, filepath.Join("impl", "python", ".venv", "bin", "python"), "make pyimpl", ImplDirEnv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ImplDirEnv, tc.tree)
			cmds, err := Commands(topo)
			var le *Error
			if tc.name == "not built" {
				if !errors.As(err, &le) || le.Component != "a" {
					t.Fatalf("Commands = %v, %v; want an *Error for component a", cmds, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil || len(cmds) != 1 || strings.Join(cmds[runtime.LangPython], " ") != strings.Join(tc.want, " ") {
				t.Errorf("Commands = %v, %v; want {python: %v}", cmds, err, tc.want)
			}
		})
	}
}

// TestListener: a tcp listener is a port picked now and held until the
// deployer lets it go; a unix one keeps its path and holds nothing.
func TestListener(t *testing.T) {
	l, hold, err := Listener(runtime.Endpoint{Transport: "grpc", Network: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	addr := l.GetEndpoint().GetAddr()
	if strings.HasSuffix(addr, ":0") || !strings.HasPrefix(addr, "127.0.0.1:") || hold == nil {
		t.Fatalf("tcp listener at %q (held by %v), want a loopback port, held", addr, hold)
	}
	if lis, err := net.Listen("tcp", addr); err == nil {
		_ = lis.Close()
		t.Errorf("the port picked is free before it is let go")
	}
	if err := hold.Close(); err != nil {
		t.Fatal(err)
	}
	if lis, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("the port let go is still held: %v", err)
	} else {
		_ = lis.Close()
	}
	path := filepath.Join(t.TempDir(), "a.sock")
	if l, hold, err := Listener(runtime.Endpoint{Transport: "grpc", Network: "unix", Addr: path}); err != nil || l.GetEndpoint().GetAddr() != path || hold != nil {
		t.Errorf("unix listener = %v, %v, %v; want %s, nothing held", l, hold, err, path)
	}
}

// TestListenersDistinct: the listeners a deployment picks before its hosts
// start never share a port. Released at once, 500 picks among the ~12,800
// ports below the ephemeral range repeat one almost surely (a deployment
// once gave two Python replicas one address, and their caller refused the
// endpoint set).
func TestListenersDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		l, hold, err := Listener(runtime.Endpoint{Transport: "http", Network: "tcp"})
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Close()
		addr := l.GetEndpoint().GetAddr()
		if seen[addr] {
			t.Fatalf("%s picked twice", addr)
		}
		seen[addr] = true
	}
}
