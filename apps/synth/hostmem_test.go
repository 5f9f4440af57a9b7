package synth_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/deploy/local"
)

// leanHostBin is svclab's host binary and the options that have the
// local deployer start it: $SVCLAB_BIN (make test sets it, after make
// build put the host binary beside it), whose deployer picks the host
// binary as `svclab up` does; or else cmd/svclab-host built as make build
// builds it, named as the executable.
func leanHostBin(t *testing.T) (string, local.Options) {
	t.Helper()
	if bin := os.Getenv("SVCLAB_BIN"); bin != "" {
		lean, ok := hostentry.Lean(bin)
		if !ok {
			t.Fatalf("no host binary built with %s beside it (make build puts one there)", bin)
		}
		return lean, local.Options{Options: deploy.Options{Executable: bin}}
	}
	out := filepath.Join(t.TempDir(), "svclab-host")
	cmd := exec.Command("go", "build", "-o", out, "github.com/svclab/svclab/cmd/svclab-host")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the host binary: %v\n%s", err, b)
	}
	return out, local.Options{Options: deploy.Options{Executable: out}, Args: []string{}}
}

// TestHostMemory holds the bound on a host's memory: every host
// of a split synth topology, run by svclab's host binary as `svclab up`
// runs it, is under 15 MB resident after 100 requests through the
// topology. Resident memory counts pages, which the machine's load does
// not change. The 100 services of docs/PERFORMANCE.md ("Synth topologies
// at scale") held as much per host as these 10.
func TestHostMemory(t *testing.T) {
	bin, opts := leanHostBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := upWith(t, ctx, scaleSpec(10, "split"), opts)
	invoke(t, ctx, d, 100)
	const bound = 15_000_000
	hosts := 0
	for _, p := range d.Processes() {
		info := p.Info()
		if info.Role != deploy.RoleHost {
			continue
		}
		hosts++
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", info.PID)); err != nil || exe != bin {
			t.Errorf("%s runs %s (%v), want %s", info, exe, err, bin)
		}
		u, err := p.Resources().Sample(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: RSS %.1f MiB, PSS %.1f MiB", info, float64(u.RSSBytes)/(1<<20), float64(u.PSSBytes)/(1<<20))
		if u.RSSBytes >= bound {
			t.Errorf("%s holds %d bytes resident, want under %d", info, u.RSSBytes, bound)
		}
	}
	if hosts != 10 {
		t.Errorf("%d hosts, want 10", hosts)
	}
}
