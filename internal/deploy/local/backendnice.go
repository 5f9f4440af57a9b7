package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The tracing backend stands for a mesh's telemetry service, which runs on
// machines of its own in a real cluster; here it shares the two cores with
// the system under test, and at 500 spans/s its ingest competed with the
// hops for a core, which measured as tracing's cost on the request path
// (docs/PERFORMANCE.md, "Mesh: what tracing costs"). It runs at the lowest
// CPU priority instead: it takes the CPU the system under test leaves, and
// yields it at once when a hop wakes. Spans queue in the hosts' batchers
// and its receiver meanwhile; a backend starved long enough to lose some
// shows in the run's trace check, as any loss does.

// BackendNiceEnv sets the backend's nice value, 19 when unset; 0 runs it
// at the system under test's priority, as before (measurements).
const BackendNiceEnv = "SVCLAB_BACKEND_NICE"

// backendCommand runs bin with args at the backend's priority: under
// nice(1), so that every thread the program starts inherits it.
func backendCommand(bin string, args ...string) *exec.Cmd {
	n := 19
	if v, err := strconv.Atoi(os.Getenv(BackendNiceEnv)); err == nil && v >= 0 && v <= 19 {
		n = v
	}
	nice, err := exec.LookPath("nice")
	if n == 0 || err != nil {
		return exec.Command(bin, args...)
	}
	return exec.Command(nice, append([]string{"-n", strconv.Itoa(n), bin}, args...)...)
}

// backendName is the program cmd runs, past nice(1), for messages.
func backendName(cmd *exec.Cmd) string {
	if len(cmd.Args) > 3 && cmd.Args[1] == "-n" && cmd.Path != "" && cmd.Args[0] != "" && filepath.Base(cmd.Args[0]) == "nice" {
		return cmd.Args[3]
	}
	return cmd.Path
}
