package local

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/child"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/procgroup"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// process is one child: one group of components. It is a deploy.Process.
type process struct {
	// group and ordinal say which replica of which group it is; ordinals
	// count up from 0 within a group and are never reused.
	group, ordinal int
	// retired is set when the deployer scales the replica away: its
	// exit is then no crash.
	retired atomic.Bool
	// readyAt is when it passed its health checks.
	readyAt time.Time

	info   deploy.ProcessInfo
	listen map[string]runtime.Endpoint
	// metrics is its metrics listener's address, with deploy.metrics.
	metrics string
	res     deploy.ResourceSource
	cg      *cgroup.Group // nil when the process has no limits
	oom     bool          // the OOM killer ended it

	cmd *exec.Cmd
	// leader signals its process group and reaps it (procgroup): every
	// exit of the process ends what is left of its group.
	leader   *procgroup.Leader
	tail     *ring
	readDone chan struct{}
	done     chan struct{}
	waitErr  error
}

func (p *process) Info() deploy.ProcessInfo               { return p.info }
func (p *process) Listeners() map[string]runtime.Endpoint { return p.listen }
func (p *process) Resources() deploy.ResourceSource       { return p.res }
func (p *process) Tail() []string                         { return p.tail.lines() }
func (p *process) Done() <-chan struct{}                  { return p.done }

// Exit describes how the process ended, with its output tail; valid after
// Done.
func (p *process) Exit() *deploy.ExitError {
	status := "exit status 0"
	if p.waitErr != nil {
		status = p.waitErr.Error()
	}
	if p.oom {
		status = fmt.Sprintf("killed by the OOM killer at its memory limit of %s (%s)", spec.ByteSize(p.cg.Limits().Memory), status)
	}
	return &deploy.ExitError{Process: p.info, Status: status, Tail: p.Tail(), OutOfMemory: p.oom}
}

// start launches one host.
func (d *Deployment) start(hc *hostv1.HostConfig, s *sockets) (*process, error) {
	cfg, err := runtime.EncodeHostConfig(hc)
	if err != nil {
		return nil, err
	}
	name := d.replicaName(s.group, s.ordinal)
	args := append(slices.Clone(d.opts.Args), "--deployment", d.id, "--group", hc.Group)
	cmd := exec.Command(d.opts.Executable, args...)
	d.langCommand(cmd, hc) // a Java or Python host instead (languages.go)
	cmd.Env = append(os.Environ(), d.opts.Env...)
	cmd.Env = append(cmd.Env, runtime.HostConfigEnv+"="+string(cfg), runtime.DeploymentEnv+"="+d.id)
	cg, cgEnv, err := d.NewProcessCgroup(name, hc.Group)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, cgEnv...)
	cmd.ExtraFiles = s.files
	proc := &process{
		group:   s.group,
		ordinal: s.ordinal,
		info:    deploy.ProcessInfo{Name: name, Group: hc.Group, Role: deploy.RoleHost, Components: hc.Components},
		listen:  map[string]runtime.Endpoint{},
		metrics: hc.GetMesh().GetMetrics().GetListener().GetEndpoint().GetAddr(),
	}
	for c, l := range hc.Listeners {
		proc.listen[c] = runtime.EndpointOf(l.Endpoint)
	}
	if hc.Gateway != nil {
		proc.listen["gateway"] = runtime.EndpointOf(hc.Gateway.Endpoint)
	}
	s.release() // a Java or Python host binds these ports itself
	start := cmd.Start
	if d.net != nil {
		start = func() error { return d.startIn(cmd, hc.Group) }
	}
	if err := d.launch(cmd, launchOpts{start: start, deathsig: syscall.SIGKILL, cg: cg, ownCg: true}, proc); err != nil {
		return nil, err
	}
	return proc, nil
}

// launchOpts say how launch starts a process.
type launchOpts struct {
	// start starts the command: cmd.Start, or startIn.
	start    func() error
	deathsig syscall.Signal
	// cg, when set, is the cgroup the process is moved into as soon as it
	// exists; ownCg says it is the process's own, which it is sampled
	// through and which goes with it (its host's, for a sidecar, is only
	// joined).
	cg    *cgroup.Group
	ownCg bool
	// tree samples it with its children (nginx's master and workers: the
	// master alone holds only its own CPU time).
	tree bool
}

// launch starts cmd as the process p (whose name, role and listeners the
// caller set) from the spawner's thread: in its own process group, so
// that a terminal's SIGINT goes to svclab alone, which stops the children
// in order, and Stop can signal the child and anything it started at
// once; with the parent-death signal c.deathsig, which it gets when the
// spawner's thread ends, so with svclab, even on -9; its output recorded;
// and in c.cg when that is set.
func (d *Deployment) launch(cmd *exec.Cmd, c launchOpts, p *process) error {
	dropCgroup := func() {
		if c.cg != nil && c.ownCg {
			_ = c.cg.Remove()
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: c.deathsig}
	r, w, err := os.Pipe()
	if err != nil {
		dropCgroup()
		return fmt.Errorf("output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	startErr := d.spawnInto(cmd, c.cg, c.start)
	_ = w.Close()
	if startErr != nil {
		_ = r.Close()
		dropCgroup()
		return fmt.Errorf("start %s: %w", cmd.Path, startErr)
	}
	p.info.PID = cmd.Process.Pid
	p.cmd = cmd
	p.leader = procgroup.New(cmd)
	p.leader.EndGroup()
	p.tail = newRing(d.opts.TailLines)
	p.readDone, p.done = make(chan struct{}), make(chan struct{})
	p.res = d.proc.Process(p.info.PID)
	if c.tree {
		p.res = d.proc.Tree(p.info.PID)
	}
	if c.cg != nil {
		lim := c.cg.Limits()
		p.info.Limits = &lim
		if c.ownCg {
			p.cg, p.res = c.cg, procstat.CgroupSource{Proc: p.res, Group: c.cg}
		}
	}
	go p.read(r, d.opts.Log)
	go p.wait()
	return nil
}

// spawnInto starts cmd through start on the spawner's thread and moves it
// into cg, when that is set, as soon as it exists; a process that cannot
// join is killed.
func (d *Deployment) spawnInto(cmd *exec.Cmd, cg *cgroup.Group, start func() error) error {
	var err error
	d.spawn.do(func() {
		if err = start(); err == nil && cg != nil {
			if err = cg.Add(cmd.Process.Pid); err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}
	})
	return err
}

// read records the child's output until it closes.
func (p *process) read(r *os.File, log io.Writer) {
	defer close(p.readDone)
	defer r.Close()
	child.ReadLines(r, maxLine, func(s string) {
		p.tail.add(s)
		if log != nil {
			writeLine(log, "["+p.info.Name+"] "+s+"\n")
		}
	})
}

// writeLine writes whole lines, so children's output does not interleave
// mid-line.
func writeLine(w io.Writer, s string) {
	logMu.Lock()
	defer logMu.Unlock()
	_, _ = io.WriteString(w, s)
}

// wait reaps the child, once what it left in its group is killed, then
// waits (briefly) for its output to drain, so that an exit error carries
// the child's last words.
func (p *process) wait() {
	p.waitErr = p.leader.Wait()
	p.oom = killedBy(p.waitErr, syscall.SIGKILL) && outOfMemory(p.cg)
	select {
	case <-p.readDone:
	case <-time.After(time.Second):
		// Something the child started still holds the pipe; the tail is
		// as complete as it will get.
	}
	close(p.done)
}

// watchProcess reports a child that exits before Stop, unless it was
// scaled away, and takes it out of its callers' endpoint sets.
func (d *Deployment) watchProcess(p *process) {
	go func() {
		select {
		case <-p.done:
			if p.retired.Load() {
				return
			}
			select {
			case <-d.stopping:
				return
			default:
			}
			d.forget(p)
			select {
			case d.exited <- p:
			case <-d.stopping:
			}
		case <-d.stopping:
		}
	}()
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalGroup signals the process group p leads, unless p has been reaped:
// its id may then belong to someone else. p.done closes only some time
// after the reap, so the reap itself is what is checked (procgroup).
func signalGroup(p *process, sig syscall.Signal) {
	_ = p.leader.Signal(sig)
}

func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// startIn starts cmd where d.net places group's process, from the
// spawner's thread, and moves the thread back.
func (d *Deployment) startIn(cmd *exec.Cmd, group string) error {
	i, err := d.groupIndex(group)
	if err != nil {
		return err
	}
	leave, err := d.net.Enter(i)
	if err != nil {
		return err
	}
	startErr := cmd.Start()
	if err := leave(); err != nil {
		// The thread is in the wrong place for good; the spawner ends it.
		d.spawn.lost = true
		return errors.Join(startErr, fmt.Errorf("spawner thread: %w", err))
	}
	return startErr
}
