package local

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Hosts in Java and Python (deploy.languages, docs/LANGUAGES.md) run one
// component each, from the same HostConfig as `svclab host`. Two things
// differ from a Go host:
//
//   - They bind their listeners themselves, by address: neither grpc-java's
//     Netty, Tomcat nor grpcio can serve a socket they did not bind, so the
//     deployer gives them fd 0. On tcp it picks a free port below the
//     kernel's ephemeral range (internal/deploy/ports) and closes it just before the
//     start; should another program take it in between, the host fails
//     with "address in use", which the deployer reports with its output.
//   - Their command is the JVM with impl/java's jar, or impl/python's
//     virtualenv, found under ImplDirEnv or above the svclab executable or
//     the working directory.

// ImplDirEnv names the directory holding impl/java and impl/python (the
// svclab source tree) when it is neither above the svclab executable nor
// above the working directory.
const ImplDirEnv = "SVCLAB_IMPL_DIR"

// Paths of the built implementations under the source tree, and the make
// targets that build them.
var langBuild = map[string]struct{ artifact, target, tool, toolHint string }{
	runtime.LangJava:   {filepath.Join("impl", "java", "target", "svclab-java.jar"), "make java", "java", "install a JDK 17 (Debian: openjdk-17-jdk-headless)"},
	runtime.LangPython: {filepath.Join("impl", "python", ".venv", "bin", "python"), "make pyimpl", "python3", "install Python 3 (Debian: python3-venv)"},
}

// langHosts returns, for every language other than Go that p uses, the
// command that runs its host; an error names the deploy.languages key and
// what to install or build when a toolchain or build is missing.
func langHosts(p *runtime.Topology) (map[string][]string, error) {
	out := map[string][]string{}
	for _, c := range slices.Sorted(maps.Keys(p.Languages)) {
		lang := p.Language(c)
		if out[lang] != nil {
			continue
		}
		argv, err := langHost(lang)
		if err != nil {
			return nil, &langError{component: c, lang: lang, err: err}
		}
		out[lang] = argv
	}
	return out, nil
}

// langError is a language's host that cannot run here.
type langError struct {
	component, lang string
	err             error
}

func (e *langError) Error() string {
	return fmt.Sprintf("deploy.languages.%s = %q: %v", e.component, e.lang, e.err)
}

func (e *langError) Unwrap() error { return e.err }

// checkLanguages is Traits.CheckMachine: a missing JDK, Python or build is a spec error
// at the deploy.languages key, before anything starts (the runner resolves
// every run first).
func checkLanguages(s *spec.Spec, topo *runtime.Topology) error {
	_, err := langHosts(topo)
	var le *langError
	if errors.As(err, &le) {
		return s.Errorf("deploy.languages."+le.component, "%q: %v", le.lang, le.err)
	}
	return err
}

func langHost(lang string) ([]string, error) {
	b, ok := langBuild[lang]
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
		java, _ := exec.LookPath("java")
		return []string{java, "-jar", path}, nil
	default:
		return []string{path, "-m", "svclab_impl"}, nil
	}
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

// bindByAddress is the listener of a host that binds its own: a unix path
// as is, a tcp port picked now.
func bindByAddress(ep runtime.Endpoint) (*hostv1.Listener, error) {
	if ep.Network != "unix" {
		lis, err := ports.Listen()
		if err != nil {
			return nil, fmt.Errorf("pick a port for %s: %w", ep, err)
		}
		ep.Addr = lis.Addr().String()
		if err := lis.Close(); err != nil {
			return nil, fmt.Errorf("pick a port for %s: %w", ep, err)
		}
	}
	return &hostv1.Listener{Endpoint: ep.Proto()}, nil
}

// langCommand makes cmd run the host of hc's group in its language, when
// that is not Go.
func (d *Deployment) langCommand(cmd *exec.Cmd, hc *hostv1.HostConfig) {
	if len(hc.Components) != 1 {
		return
	}
	argv := d.langs[d.topo.Language(hc.Components[0])]
	if argv == nil {
		return
	}
	cmd.Path, cmd.Args = argv[0], argv
}

// langHost reports whether p runs a Java or Python host (not the proxy
// beside one, which names the same component).
func (d *Deployment) langHost(p *process) bool {
	return p.info.Role == deploy.RoleHost && len(p.info.Components) == 1 && d.langs[d.topo.Language(p.info.Components[0])] != nil
}
