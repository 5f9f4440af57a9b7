package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/tempdir"
)

// shared is the test binary's cluster, and skip why it has none.
var (
	shared *Cluster
	skip   string
)

// Nodes is how many kwok nodes Main's cluster has: two, as study S0's two
// machines.
const Nodes = 2

// Main is a TestMain for a package whose tests share one cluster: it
// starts the cluster, runs the tests and stops it, and returns the exit
// code. Without the binaries (ErrNoTools) the tests that call Get skip,
// saying how to build them; with ToolsEnv set, a missing binary fails.
func Main(m *testing.M) int { return run(m, Nodes, Options{}) }

// MainNode is Main for the tests of the real node: a control plane with
// the real node and no kwok node. Where the machine cannot run it
// (ErrNoNode: not root, containerd missing) the tests skip saying why.
// After the tests it stops the node and fails the package when anything
// of it is left on the machine (NodeLeftovers, which the stop checks).
func MainNode(m *testing.M) int { return run(m, 0, Options{Node: true, NodeWait: 10 * time.Minute}) }

func run(m *testing.M, nodes int, opts Options) int {
	c, err := Start(context.Background(), nodes, opts)
	switch {
	case errors.Is(err, ErrNoTools), errors.Is(err, ErrNoNode), errors.Is(err, ErrNodeBusy):
		skip = err.Error()
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		tempdir.RemoveOwn()
		return 1
	default:
		shared = c
		// Parallel tests cannot Setenv, and every deployer they start
		// reads the kubeconfig from the environment.
		os.Setenv("KUBECONFIG", c.Kubeconfig)
	}
	code := m.Run()
	if shared != nil {
		// The real node's stop fails when anything of it is left.
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kubetest: stop:", err)
			code = 1
		}
	}
	tempdir.RemoveOwn()
	return code
}

// Get returns the cluster Main started, or skips t with the reason there
// is none.
func Get(t testing.TB) *Cluster {
	t.Helper()
	if shared == nil {
		if skip == "" {
			t.Fatal("kubetest: Get without kubetest.Main in TestMain")
		}
		t.Skip(skip)
	}
	return shared
}
