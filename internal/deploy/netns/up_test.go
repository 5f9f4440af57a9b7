package netns_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/netns"
	"github.com/svclab/svclab/internal/spec"
)

// upSpecEnv makes the test binary run `svclab up` on the named spec, so a
// test can kill a real deployer with -9.
const upSpecEnv = "SVCLAB_TEST_UP_SPEC"

// deployEnv makes the test binary deploy the named spec once and exit:
// 3 when the deployer refused for want of root, 1 on another error.
const deployEnv = "SVCLAB_TEST_DEPLOY_SPEC"

func runDeploy(path string) int {
	s, err := spec.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	deployer, topo, err := deploy.Resolve(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := deployer.Deploy(context.Background(), topo, deploy.Options{})
	if err == nil {
		_ = d.Stop(context.Background())
		return 0
	}
	fmt.Fprintln(os.Stderr, err)
	if errors.Is(err, netns.ErrNotRoot) {
		return 3
	}
	return 1
}

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
