package local

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// HostConfigFromEnv returns the HostConfig a deployer put in
// runtime.HostConfigEnv, or nil when the variable is unset.
func HostConfigFromEnv() (*hostv1.HostConfig, error) {
	v, ok := os.LookupEnv(runtime.HostConfigEnv)
	if !ok {
		return nil, nil
	}
	return runtime.DecodeHostConfig([]byte(v))
}

// RunHost runs a host for cfg until SIGTERM or SIGINT, as `svclab host`
// does, logging with microsecond timestamps to stderr (which the deployer
// records).
func RunHost(ctx context.Context, cfg *hostv1.HostConfig) error {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if err := joinCgroup(); err != nil {
		return err
	}
	hogIfAsked(cfg.GetGroup())
	spinIfAsked(cfg.GetGroup())
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	return runtime.RunHost(ctx, cfg, runtime.Middleware{})
}

// RunIfChild turns the current process into a host and exits, when it was
// started by Deploy (runtime.HostConfigEnv is set); otherwise it returns at
// once. A binary other than svclab that is passed as Options.Executable — a
// test binary, from its TestMain — calls it before anything else.
func RunIfChild() {
	cfg, err := HostConfigFromEnv()
	if cfg == nil && err == nil {
		return
	}
	if err == nil {
		err = RunHost(context.Background(), cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svclab host:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
