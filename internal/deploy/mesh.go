package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// JaegerVersion is the Jaeger that `make jaeger` builds (tools/jaeger) and
// deploy.tracing runs as its backend.
const JaegerVersion = "v1.76.0"

// JaegerEnv, when set, names the Jaeger binary to run instead of the one
// `make jaeger` builds.
const JaegerEnv = "SVCLAB_JAEGER"

// JaegerPath is where the Jaeger binary is: $SVCLAB_JAEGER, or
// ${XDG_CACHE_HOME:-~/.cache}/svclab/jaeger-<version>/jaeger, where `make
// jaeger` builds it once for every clone on the machine.
func JaegerPath() string {
	if p := os.Getenv(JaegerEnv); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "svclab", "jaeger-"+JaegerVersion, "jaeger")
}

// PrometheusEnv, when set, names the Prometheus binary deploy.metrics runs
// instead of the first `prometheus` on PATH (Debian's package).
const PrometheusEnv = "SVCLAB_PROMETHEUS"

// PrometheusPath is the Prometheus binary deploy.metrics runs.
func PrometheusPath() (string, error) {
	p := os.Getenv(PrometheusEnv)
	if p == "" {
		var err error
		if p, err = exec.LookPath("prometheus"); err != nil {
			return "", fmt.Errorf("no prometheus on PATH (Debian package prometheus; .ci/run installs it) and $%s unset", PrometheusEnv)
		}
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// checkMesh checks, before anything starts, that what the mesh keys need
// is on this machine.
func checkMesh(s *spec.Spec, topo *runtime.Topology) error {
	if topo.Mesh.Tracing > 0 {
		p := JaegerPath()
		st, err := os.Stat(p)
		if err == nil && (st.IsDir() || st.Mode().Perm()&0o111 == 0) {
			err = fmt.Errorf("not an executable file")
		}
		if err != nil {
			return s.Errorf("deploy.tracing", "tracing needs Jaeger %s as its backend, and %s is missing (%v): build it once with `make jaeger`, or name a binary in $%s", JaegerVersion, p, err, JaegerEnv)
		}
	}
	if topo.Mesh.Metrics {
		if _, err := PrometheusPath(); err != nil {
			return s.Errorf("deploy.metrics", "metrics need Prometheus as their scraper: %v", err)
		}
	}
	return nil
}
