package netns_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// upSpecEnv makes the test binary run `svclab up` on the named spec, so a
// test can kill a real deployer with -9.
const upSpecEnv = "SVCLAB_TEST_UP_SPEC"

func runUp(path string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := func() error {
		s, err := spec.Load(path)
		if err != nil {
			return err
		}
		deployer, topo, err := deploy.Resolve(s)
		if err != nil {
			return err
		}
		d, err := deployer.Deploy(ctx, topo, deploy.Options{})
		if err != nil {
			return err
		}
		return deploy.Foreground(ctx, d, os.Stdout)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "up:", err)
		return 1
	}
	return 0
}
