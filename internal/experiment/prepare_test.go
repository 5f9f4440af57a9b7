package experiment

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// TestPrepareChecksDeployer checks that a run naming an unknown deployer
// fails while the plan is made, before anything starts, at the factor that
// set it.
func TestPrepareChecksDeployer(t *testing.T) {
	s := mustParse(t, `[app]
name = "chain"
[experiment.factors]
"deploy.deployer" = ["nowhere", "moon"]
`)
	_, _, err := PlanSpec(context.Background(), s, 1)
	found := 0
	for _, e := range spec.Unjoin(err) {
		var se *spec.Error
		if errors.As(e, &se) && se.Key == "deploy.deployer" && se.Line == 4 {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("PlanSpec error %v, want one about each level of deploy.deployer at line 4", err)
	}
}

// TestBackingLeavesRemoteOut checks that the shop under the kube deployer
// starts no PostgreSQL on this machine: its database runs as a pod of
// the deployment.
func TestBackingLeavesRemoteOut(t *testing.T) {
	s := mustParse(t, `[app]
name = "shop"
[deploy]
deployer = "kube"
[load]
rate = 10
`)
	pr, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(runtime.BackingsOf(pr.Runtime)) == 0 {
		t.Fatal("the shop declares no backing service; the test needs one")
	}
	pool, err := startBacking(context.Background(), map[string]*Prepared{"r1": pr}, io.Discard)
	if err != nil {
		t.Fatalf("startBacking: %v", err)
	}
	defer closeBacking(pool, io.Discard)
	if pids := pool.Servers(); len(pids) != 0 || pr.Backing != nil {
		t.Errorf("a kube run started backing servers %v here (pool given: %v)", pids, pr.Backing != nil)
	}
}
