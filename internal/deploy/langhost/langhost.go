// Package langhost finds the hosts of the languages other than Go
// (deploy.languages, docs/LANGUAGES.md): the JVM with impl/java's jar, or
// impl/python's virtualenv, each of which runs one component from the same
// HostConfig as `svclab host`. They are found under ImplDirEnv or above
// the svclab executable or the working directory; what is missing (the
// toolchain, the build) is an error that names the deploy.languages key
// and what to install or build, before anything starts (Check).
//
// Such a host binds its listeners itself, by address: neither grpc-java's
// Netty, Tomcat nor grpcio can serve a socket it did not bind, so the
// deployer gives it addresses (Listener) where it gives a Go host
// inherited sockets. On tcp Listener picks a free port below the kernel's
// ephemeral range (internal/deploy/ports), which the deployer holds until
// just before it starts the host; should another program take it in
// between, the host fails with "address in use", which the deployer
// reports with its output.
package langhost

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// ImplDirEnv names the directory holding impl/java and impl/python (the
// svclab source tree) when it is neither above the svclab executable nor
// above the working directory.
const ImplDirEnv = "SVCLAB_IMPL_DIR"

// Paths of the built implementations under the source tree, and the make
// targets that build them.
var builds = map[string]struct{ artifact, target, tool, toolHint string }{
	runtime.LangJava:   {filepath.Join("impl", "java", "target", "svclab-java.jar"), "make java", "java", "install a JDK 17 (Debian: openjdk-17-jdk-headless)"},
	runtime.LangPython: {filepath.Join("impl", "python", ".venv", "bin", "python"), "make pyimpl", "python3", "install Python 3 (Debian: python3-venv)"},
}

// Commands returns, for every language other than Go that p uses, the
// command that runs its host; an error (an *Error) names the
// deploy.languages key and what to install or build when a toolchain or
// build is missing.
func Commands(p *runtime.Topology) (map[string][]string, error) {
	out := map[string][]string{}
	for _, c := range slices.Sorted(maps.Keys(p.Languages)) {
		lang := p.Language(c)
		if out[lang] != nil {
			continue
		}
		argv, err := command(lang)
		if err != nil {
			return nil, &Error{Component: c, Lang: lang, Err: err}
		}
		out[lang] = argv
	}
	return out, nil
}

// Error is a language's host that cannot run here.
type Error struct {
	Component, Lang string
	Err             error
}

func (e *Error) Error() string {
	return fmt.Sprintf("deploy.languages.%s = %q: %v", e.Component, e.Lang, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Check is a deployer's Traits.CheckMachine for deploy.languages: a
// missing JDK, Python or build is a spec error at the deploy.languages
// key, before anything starts (the runner resolves every run first).
func Check(s *spec.Spec, topo *runtime.Topology) error {
	_, err := Commands(topo)
	var le *Error
	if errors.As(err, &le) {
		return s.Errorf("deploy.languages."+le.Component, "%q: %v", le.Lang, le.Err)
	}
	return err
}

func command(lang string) ([]string, error) {
	b, ok := builds[lang]
	if !ok {
		return nil, fmt.Errorf("no host for language %q", lang)
	}
	if _, err := exec.LookPath(b.tool); err != nil {
		return nil, fmt.Errorf("%s not found on PATH: %s", b.tool, b.toolHint)
	}
	root, err := implRoot(b.artifact)
	if err != nil {
		return nil, fmt.Errorf("%w; build it with `%s` in the svclab source tree (or set %s to that tree)", err, b.target, ImplDirEnv)
	}
	path := filepath.Join(root, b.artifact)
	switch lang {
	case runtime.LangJava:
		// The class path as the archive was made with it (realpath).
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		java, _ := exec.LookPath("java")
		return append(append([]string{java}, ClassDataArchive(path)...), "-jar", path), nil
	default:
		return []string{path, "-m", "svclab_impl"}, nil
	}
}

// ClassDataArchive is the JVM's options that map the Java host's classes
// from the archive `make java` trains beside the jar (scripts/java-cds.sh):
// a start takes about 40% less CPU with it. None when the archive is
// missing, empty (its training failed) or older than the jar, which it was
// not made from. A JVM that
// cannot use it anyway (another JDK build, the tree moved) starts without
// it, and its warning is switched off: the host's output is the run's.
func ClassDataArchive(jar string) []string {
	archive := strings.TrimSuffix(jar, ".jar") + ".jsa"
	a, err := os.Stat(archive)
	if err != nil || a.Size() == 0 { // empty: its training failed
		return nil
	}
	j, err := os.Stat(jar)
	if err != nil || a.ModTime().Before(j.ModTime()) {
		return nil
	}
	return []string{"-XX:SharedArchiveFile=" + archive, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}
}

// implRoot finds the source tree that holds artifact: ImplDirEnv, else the
// first directory above the executable or the working directory that does.
func implRoot(artifact string) (string, error) {
	if dir := os.Getenv(ImplDirEnv); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, artifact)); err != nil {
			return "", fmt.Errorf("%s=%s has no %s", ImplDirEnv, dir, artifact)
		}
		return dir, nil
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			starts = append(starts, filepath.Dir(exe))
		}
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	var trees []string
	for _, dir := range starts {
		for {
			if _, err := os.Stat(filepath.Join(dir, "impl")); err == nil {
				if _, err := os.Stat(filepath.Join(dir, artifact)); err == nil {
					return dir, nil
				}
				trees = append(trees, dir)
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if len(trees) > 0 {
		return "", fmt.Errorf("%s is not built", filepath.Join(trees[0], artifact))
	}
	return "", errors.New("no svclab source tree (with impl/) above the svclab executable or the working directory")
}

// Listener is the listener ep of a host that binds its own: a unix path
// as is, or a tcp port picked now. The port stays bound by hold until the
// deployer closes it, just before it starts the host: a port released at
// once could be picked again for the next listener (another replica's),
// and the deployment would give two of them one address. hold is nil for
// a unix path.
func Listener(ep runtime.Endpoint) (l *hostv1.Listener, hold io.Closer, err error) {
	if ep.Network != "unix" {
		lis, err := ports.Listen()
		if err != nil {
			return nil, nil, fmt.Errorf("pick a port for %s: %w", ep, err)
		}
		ep.Addr, hold = lis.Addr().String(), lis
	}
	return &hostv1.Listener{Endpoint: ep.Proto()}, hold, nil
}
