package experiment

import (
	"testing"

	"github.com/svclab/svclab/internal/deploy"
)

// TestCrashText checks that a run's failure says which process died: the
// group for a group's only process, the replica for one of several, the
// proxy for a sidecar.
func TestCrashText(t *testing.T) {
	for _, tc := range []struct {
		name string
		info deploy.ProcessInfo
		want string
	}{
		{"group", deploy.ProcessInfo{Role: deploy.RoleHost, Name: "hop2", Group: "hop2", Components: []string{"hop2"}},
			"group hop2 (components hop2) exited during the run: exit status 7"},
		{"replica", deploy.ProcessInfo{Role: deploy.RoleHost, Name: "hop2#1", Group: "hop2", Components: []string{"hop2"}},
			"replica hop2#1 of group hop2 (components hop2) exited during the run: exit status 7"},
		{"sidecar", deploy.ProcessInfo{Role: deploy.RoleSidecar, Name: "hop2.envoy", Group: "hop2", PID: 42},
			"sidecar hop2.envoy of group hop2 (pid 42) exited during the run: exit status 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := crashText(&deploy.ExitError{Process: tc.info, Status: "exit status 7"}, "the run")
			if got != tc.want {
				t.Errorf("crashText = %q, want %q", got, tc.want)
			}
		})
	}
}
