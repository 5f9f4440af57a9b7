package langhost

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestJavaClassDataArchive: the Java host's command maps its classes from
// the archive make java trains beside the jar when the archive is at
// least as new as the jar, and not when it is missing or older; and the
// built tree's command does load the host's classes from it.
func TestJavaClassDataArchive(t *testing.T) {
	dir := t.TempDir()
	jar := filepath.Join(dir, "svclab-java.jar")
	archive := filepath.Join(dir, "svclab-java.jsa")
	if err := os.WriteFile(jar, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tc := range []struct {
		name    string
		archive *time.Time // its modification time; nil: none
		want    bool
	}{
		{"none", nil, false},
		{"empty: its training failed", ptr(now.Add(time.Minute)), false},
		{"older than the jar", ptr(now.Add(-time.Minute)), false},
		{"as new as the jar", ptr(now), true},
		{"newer", ptr(now.Add(time.Minute)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(archive)
			if tc.archive != nil {
				var content []byte
				if !strings.HasPrefix(tc.name, "empty") {
					content = []byte("an archive")
				}
				if err := os.WriteFile(archive, content, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(archive, *tc.archive, *tc.archive); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chtimes(jar, now, now); err != nil {
				t.Fatal(err)
			}
			got := ClassDataArchive(jar)
			if has := slices.Contains(got, "-XX:SharedArchiveFile="+archive); has != tc.want {
				t.Errorf("options %v: archive used %v, want %v", got, has, tc.want)
			}
		})
	}

	t.Run("built", func(t *testing.T) {
		if _, err := exec.LookPath("java"); err != nil {
			t.Skip("java not on PATH")
		}
		root, err := implRoot(builds[runtime.LangJava].artifact)
		if err != nil {
			t.Skipf("the Java host is not built (make java): %v", err)
		}
		built := filepath.Join(root, builds[runtime.LangJava].artifact)
		if ClassDataArchive(built) == nil {
			t.Skipf("no class-data archive beside %s as new as it: make java trains one where the JVM can", built)
		}
		argv, err := command(runtime.LangJava)
		if err != nil {
			t.Fatal(err)
		}
		// The host's Main loads, finds a bad flag and exits 2.
		argv = slices.Insert(argv, 1, "-Xlog:class+load=info")
		out, _ := exec.Command(argv[0], append(argv[1:], "--no-such-flag")...).CombinedOutput()
		if !regexp.MustCompile(`(?m)com\.github\.svclab\.impl\.Main source: shared objects file`).Match(out) {
			t.Errorf("%s: the host's Main was not loaded from the archive:\n%s", strings.Join(argv, " "), out)
		}
		if strings.Contains(string(out), "[warning]") {
			t.Errorf("the JVM warned:\n%s", out)
		}
	})
}

func ptr[T any](v T) *T { return &v }
