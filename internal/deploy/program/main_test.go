package program

import (
	"os"
	"testing"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/tempdir"
)

// TestMain removes, as svclab's commands do when they end
// (internal/cli/clean.go), the process's own temp root (the unix sockets'
// and the sidecars' directories live in it) and the cgroup parent its
// programs' groups were made in: without it every run of this package
// left /tmp/svclab-<pid>-* and /sys/fs/cgroup/*/svclab/<pid>-<start>.
func TestMain(m *testing.M) {
	code := m.Run()
	_ = tempdir.RemoveOwn()
	_ = cgroup.RemoveOwn()
	os.Exit(code)
}
