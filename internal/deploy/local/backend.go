package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
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
