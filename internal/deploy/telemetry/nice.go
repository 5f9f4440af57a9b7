package telemetry

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Jaeger stands for a mesh's telemetry service, which runs on
// machines of its own in a real cluster; here it shares the two cores with
// the system under test, and its ingest of every span competes with the
// hops for a core, which a run measures as tracing's cost on the request
// path. Running it at a low CPU priority would let a hop that wakes take
// the core from it at once, while spans wait in the hosts' batchers. On
// 2026-11-23, at load average 19–24 from other work, nice 19 measured no
// gain over nice 0 (docs/PERFORMANCE.md, "Mesh: what tracing costs"), so
// Jaeger keeps the system under test's priority unless asked.

// NiceEnv sets Jaeger's nice value (0 to 19; 0, the
// system under test's own, when unset), to measure what its competition
// for the CPU costs the hops.
const NiceEnv = "SVCLAB_BACKEND_NICE"

// niceCommand runs bin with args at the priority NiceEnv asks: under
// nice(1), so that every thread the program starts inherits it.
func niceCommand(bin string, args ...string) *exec.Cmd {
	n := 0
	if v, err := strconv.Atoi(os.Getenv(NiceEnv)); err == nil && v >= 0 && v <= 19 {
		n = v
	}
	nice, err := exec.LookPath("nice")
	if n == 0 || err != nil {
		return exec.Command(bin, args...)
	}
	return exec.Command(nice, append([]string{"-n", strconv.Itoa(n), bin}, args...)...)
}

// programName is the program cmd runs, past nice(1), for messages.
func programName(cmd *exec.Cmd) string {
	if len(cmd.Args) > 3 && cmd.Args[1] == "-n" && cmd.Path != "" && cmd.Args[0] != "" && filepath.Base(cmd.Args[0]) == "nice" {
		return cmd.Args[3]
	}
	return cmd.Path
}
