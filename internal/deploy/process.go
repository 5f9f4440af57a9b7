package deploy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/runtime"
)

// Roles a sampled process can have.
const (
	// RoleHost hosts one group of components.
	RoleHost = "host"
	// RoleLoadGen is the load generator's own process, which the runner
	// samples beside a deployment's.
	RoleLoadGen = "loadgen"
	// RoleSidecar is a proxy beside one host (deploy.sidecar).
	RoleSidecar = "sidecar"
	// RoleNodeProxy is a proxy that every host of a machine shares
	// (deploy.proxy_mode = "node").
	RoleNodeProxy = "node-proxy"
	// RoleTelemetry is a telemetry backend the deployment runs beside its
	// hosts (deploy.tracing's Jaeger, deploy.metrics' Prometheus). It is
	// sampled so that a mesh's collector has a cost of its own, and kept
	// out of the system under test's CPU, as a collector on machines of
	// its own would be.
	RoleTelemetry = "telemetry"
	// RoleExternal is a process of a system svclab did not start (the
	// external deployer's deploy.external.processes), sampled as part of
	// the system under test.
	RoleExternal = "external"
)

// ProcessInfo says which process it is and what it runs. The runner records
// it in each run's run.json; Group and Role stay out of that file until its
// format changes on purpose (docs/RESULTS.md).
type ProcessInfo struct {
	// Name is unique within a run and labels the process's resource
	// samples; a group's only process is named after the group.
	Name string `json:"name"`
	// Group is the group of components the process serves, if any.
	Group string `json:"-"`
	// Role is what the process is for (RoleHost, RoleLoadGen).
	Role string `json:"-"`
	// Components hosted by the process.
	Components []string `json:"components,omitempty"`
	// PID is the process's id on the machine that runs it, or 0 where the
	// deployer cannot know it. It labels samples (a restarted process is
	// a new counter); nothing outside the deployer signals it.
	PID int `json:"pid"`
	// Limits are the process's cgroup limits and CPU set, when it has a
	// group (deploy.resources, experiment.isolation).
	Limits *cgroup.Limits `json:"limits,omitempty"`
}

// String names the process for messages: "group hop2 (components hop2, pid
// 4711)".
func (p ProcessInfo) String() string {
	switch p.Role {
	case RoleSidecar:
		return fmt.Sprintf("sidecar %s of group %s (pid %d)", p.Name, p.Group, p.PID)
	case RoleNodeProxy:
		return fmt.Sprintf("node proxy %s (pid %d)", p.Name, p.PID)
	case RoleTelemetry:
		return fmt.Sprintf("telemetry backend %s (pid %d)", p.Name, p.PID)
	case RoleExternal:
		return fmt.Sprintf("external process %s (pid %d)", p.Name, p.PID)
	}
	what := "group " + p.Group
	if p.Name != p.Group {
		what = "process " + p.Name + " of group " + p.Group
	}
	return fmt.Sprintf("%s (components %s, pid %d)", what, strings.Join(p.Components, ", "), p.PID)
}

// Process is one process of a deployment.
type Process interface {
	Info() ProcessInfo
	// Listeners maps each component the process serves to other
	// processes (and the client) to its endpoint, and "gateway" to the
	// HTTP/JSON gateway where the process serves it.
	Listeners() map[string]runtime.Endpoint
	// Resources reads the process's resource counters.
	Resources() ResourceSource
	// Tail returns the last lines the process wrote to stdout or stderr.
	Tail() []string
	// Done is closed when the process has exited and its output is
	// drained.
	Done() <-chan struct{}
	// Exit says how the process ended, with its output tail; valid after
	// Done.
	Exit() *ExitError
}

// ResourceSource reads one process's resource counters, wherever the
// process runs.
type ResourceSource interface {
	// Sample reads the counters now. It fails once the process is gone.
	Sample(ctx context.Context) (Usage, error)
}

// ResourceStreamer is a deployment whose processes are not this machine's
// (a cluster's pods): their usage comes from a service that has a sample
// at its own times, not whenever the runner's sampler ticks, and they come
// and go without the runner's doing (an HPA). Such a deployment reports
// its samples itself (Capabilities.Resources), and the sampler records
// them beside its own.
type ResourceStreamer interface {
	// StreamResources calls emit with each new sample of each process,
	// at the time the usage was measured, until ctx is done. It returns
	// at once when it has nothing to sample; the deployment says why in
	// its warnings.
	StreamResources(ctx context.Context, emit func(p ProcessInfo, at time.Time, u Usage))
}

// Usage is one reading of a process's resource counters.
type Usage struct {
	// CPUSeconds is the user and system CPU time used since the process
	// started.
	CPUSeconds float64
	// RSSBytes is the resident memory. Pages the process shares with
	// others (the binary's, mapped by every host of a split deployment)
	// count in full in each, so RSS summed over processes overstates
	// their memory.
	RSSBytes int64
	// PSSBytes is the proportional set size: resident memory with each
	// shared page divided among the processes that map it, so that it
	// sums over processes to the memory they hold; 0 where the source
	// cannot tell (a pod's container metrics).
	PSSBytes int64
	// Cgroup has the counters of the process's control group (throttling,
	// memory charged), when it has one.
	Cgroup *cgroup.Stats
}

// ExitError is a process that exited when it should not have: during start
// (a Deploy error wraps it) or while the deployment ran.
type ExitError struct {
	Process ProcessInfo
	// Status is how it ended, e.g. "exit status 1" or "signal: killed".
	Status string
	// Tail is its last output lines.
	Tail []string
	// OutOfMemory is set when the OOM killer ended the process at its
	// memory limit.
	OutOfMemory bool
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited: %s; last output:\n%s", e.Process, e.Status, IndentTail(e.Tail))
}

// StderrTails maps the process to its last output lines, joined.
func (e *ExitError) StderrTails() map[string]string {
	return map[string]string{e.Process.Name: strings.Join(e.Tail, "\n")}
}

// StderrTails maps each process's name to its last output lines, joined.
func StderrTails(procs []Process) map[string]string {
	m := make(map[string]string, len(procs))
	for _, p := range procs {
		m[p.Info().Name] = strings.Join(p.Tail(), "\n")
	}
	return m
}

// IndentTail formats output lines for an error message, indented under it.
func IndentTail(lines []string) string {
	if len(lines) == 0 {
		return "  (no output)"
	}
	return "  " + strings.Join(lines, "\n  ")
}
