package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
)

// startBackend starts cmd, a server the deployment runs beside its hosts
// (Jaeger, Prometheus), with its output in logPath, in a process group
// that dies with svclab, and waits until ready says it serves or ctx ends.
// what names it in errors ("tracing backend"). done is closed when it
// exits; on error nothing is left running and the error carries its log.
func (d *Deployment) startBackend(ctx context.Context, what string, cmd *exec.Cmd, logPath string, ready func(context.Context) bool) (done chan struct{}, err error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer logf.Close() // the child holds its own copy
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var startErr error
	d.spawn.do(func() { startErr = cmd.Start() })
	if startErr != nil {
		return nil, fmt.Errorf("%s: start %s: %w", what, backendName(cmd), startErr)
	}
	done = make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	if err := d.telemetry.add(d.id, cmd.Process.Pid); err != nil {
		stopGroup(cmd, done)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ready(ctx) {
		select {
		case <-done:
			return nil, fmt.Errorf("%s %s exited at start (%s); its log:\n%s", what, backendName(cmd), cmd.ProcessState, logTail(logPath))
		case <-ctx.Done():
			stopGroup(cmd, done)
			return nil, fmt.Errorf("%s %s not ready: %w; its log:\n%s", what, backendName(cmd), context.Cause(ctx), logTail(logPath))
		case <-tick.C:
		}
	}
	return done, nil
}

// telemetryGroup is the control group of a deployment's telemetry
// backends under deploy.telemetry_cpus = "generator" (deploy.Options.
// TelemetryCPUs): the load generator's CPUs and no limit. A backend starts
// on the system under test's CPUs, as everything a deployment starts does
// (experiment.Isolation.AsSUT), and is moved, every thread of it, before
// it serves: Jaeger and Prometheus do not fork.
type telemetryGroup struct {
	cpus string // empty: the backends stay where they start
	mu   sync.Mutex
	g    *cgroup.Group
}

// add moves process pid into the group, which it makes on first use.
func (t *telemetryGroup) add(id string, pid int) error {
	if t.cpus == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.g == nil {
		m, err := cgroup.Open()
		if err != nil {
			return fmt.Errorf("deploy.telemetry_cpus needs a cgroup (cpus %q): %w", t.cpus, err)
		}
		if t.g, err = m.New(id+"-telemetry", cgroup.Limits{CPUs: t.cpus}); err != nil {
			return fmt.Errorf("deploy.telemetry_cpus: %w", err)
		}
	}
	if err := t.g.Add(pid); err != nil {
		return fmt.Errorf("deploy.telemetry_cpus: move pid %d onto CPU %s: %w", pid, t.cpus, err)
	}
	return nil
}

// remove deletes the group once its backends have exited.
func (t *telemetryGroup) remove() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.g == nil {
		return nil
	}
	err := t.g.Remove()
	t.g = nil
	return err
}

// Backends lists the deployment's telemetry backends that are running, as
// processes named telemetry.<backend> (a deploy.BackendSource). Their CPU
// list is the telemetry group's, or the deployment's where they stayed
// with the hosts.
func (d *Deployment) Backends() []deploy.Backend {
	m := d.mesh
	if m == nil {
		return nil
	}
	var out []deploy.Backend
	add := func(name, url string, cmd *exec.Cmd, done <-chan struct{}) {
		if cmd == nil || cmd.Process == nil {
			return
		}
		select {
		case <-done:
			return
		default:
		}
		info := deploy.ProcessInfo{Name: "telemetry." + name, Role: deploy.RoleTelemetry, PID: cmd.Process.Pid}
		cpus := d.telemetry.cpus
		if cpus == "" {
			cpus = d.cpus
		}
		if cpus != "" {
			info.Limits = &cgroup.Limits{CPUs: cpus}
		}
		out = append(out, deploy.Backend{Info: info, Source: d.proc.Process(info.PID), URL: url})
	}
	if m.jaeger != nil {
		add("jaeger", m.jaeger.query, m.jaeger.cmd, m.jaeger.done)
	}
	if m.prometheus != nil {
		add("prometheus", m.prometheus.web, m.prometheus.cmd, m.prometheus.done)
	}
	return out
}
