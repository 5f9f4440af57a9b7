// Package hostentry is the entry of a `svclab host` process, the child
// side of the host protocol: it reads the HostConfig a deployer handed
// over (runtime.HostConfigEnv, or a file: the kube deployer's ConfigMap),
// joins the cgroups the deployer made for it, and runs the host until
// SIGTERM. `svclab host` (cmd/svclab) calls Run, whichever deployer
// started it (the local and netns deployers' children, the kube
// deployer's pods); a test binary that a deployer re-executes as its
// hosts calls RunIfChild from its TestMain.
package hostentry

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// LoadConfig returns the HostConfig in file path, the kube deployer's
// ConfigMap, or with path "" the one a deployer put in
// runtime.HostConfigEnv; nil and no error when there is neither.
func LoadConfig(path string) (*hostv1.HostConfig, error) {
	if path == "" {
		return ConfigFromEnv()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("host config: %w", err)
	}
	return runtime.DecodeHostConfig(b)
}

// ConfigFromEnv returns the HostConfig a deployer put in
// runtime.HostConfigEnv, or nil when the variable is unset.
func ConfigFromEnv() (*hostv1.HostConfig, error) {
	v, ok := os.LookupEnv(runtime.HostConfigEnv)
	if !ok {
		return nil, nil
	}
	return runtime.DecodeHostConfig([]byte(v))
}

// Run runs a host for cfg until SIGTERM or SIGINT, as `svclab host`
// does, logging with microsecond timestamps to stderr (which the deployer
// records).
func Run(ctx context.Context, cfg *hostv1.HostConfig) error {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if err := joinCgroup(); err != nil {
		return err
	}
	hogIfAsked(cfg.GetGroup())
	spinIfAsked(cfg.GetGroup())
	// Before the host is built: serving and the collector map again
	// about as many pages as building it does (dropped once the host
	// was ready, a host held as much after 100 requests), and here it
	// needs no hook in the runtime.
	if err := releaseStartPages(); err != nil {
		log.Printf("host: %v", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	return runtime.RunHost(ctx, cfg, runtime.Middleware{})
}

// RunIfChild turns the current process into a host and exits, when it was
// started by a deployer (runtime.HostConfigEnv is set); otherwise it
// returns at once. A binary other than svclab that a deployer starts as
// its hosts (deploy.Options.Executable) — a test binary, from its
// TestMain — calls it before anything else.
func RunIfChild() {
	cfg, err := ConfigFromEnv()
	if cfg == nil && err == nil {
		return
	}
	if err == nil {
		err = Run(context.Background(), cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svclab host:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// CgroupProcsEnv carries the cgroup.procs files a host writes its own PID
// to before it runs anything else, so no user code runs outside its
// limits. The deployer moves the child in as well once it has started,
// which covers an executable that does not know the variable.
const CgroupProcsEnv = "SVCLAB_CGROUP_PROCS"

// joinCgroup moves a host into the groups its deployer named in
// CgroupProcsEnv; without the variable it does nothing.
func joinCgroup() error {
	v := os.Getenv(CgroupProcsEnv)
	if v == "" {
		return nil
	}
	if err := cgroup.Join(strings.Split(v, string(os.PathListSeparator))); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	return nil
}

// HogEnv is a test knob: the host of the group it names, once it has run
// for 200 ms, allocates and touches memory without end (1 MiB every
// 10 ms, 4 GiB at most), so that a test can watch its memory limit end it.
const HogEnv = "SVCLAB_TEST_HOG_GROUP"

// hogIfAsked starts the HogEnv knob when it names group.
func hogIfAsked(group string) {
	if os.Getenv(HogEnv) != group {
		return
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		var keep [][]byte
		for range 4096 {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
			time.Sleep(10 * time.Millisecond)
		}
		_ = keep
	}()
}

// SpinEnv is a test knob: the host of the group it names burns CPU on
// four goroutines (for 2 minutes at most), a CPU-bound component, so that
// a test can watch a CPU set or quota hold it.
const SpinEnv = "SVCLAB_TEST_SPIN_GROUP"

// spinIfAsked starts the SpinEnv knob when it names group.
func spinIfAsked(group string) {
	if os.Getenv(SpinEnv) != group {
		return
	}
	end := time.Now().Add(2 * time.Minute)
	for range 4 {
		go func() {
			for n := 0; time.Now().Before(end); n++ {
				for i := 0; i < 1e6; i++ {
					n ^= i
				}
			}
		}()
	}
}
