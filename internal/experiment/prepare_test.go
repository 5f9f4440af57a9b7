package experiment

import (
	"context"
	"errors"
	"testing"

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
