package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/svclab/svclab/internal/tempdir"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// SvclabBin is $SVCLAB_BIN (make test sets it) or svclab built once per
// test binary, under its owner-marked temp dir: the tests that run
// `svclab run` or kill it.
func SvclabBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if b := os.Getenv("SVCLAB_BIN"); b != "" {
			binPath = b
			return
		}
		dir, err := tempdir.MkdirTemp("bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "svclab")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/svclab/svclab/cmd/svclab").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build svclab: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}
