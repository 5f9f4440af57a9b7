package local

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/runtime"
)

// ProcessError is a child that exited when it should not have: during start
// (Deploy's error wraps it) or while the deployment ran (Crashed).
type ProcessError struct {
	Group      string
	Components []string
	PID        int
	// Status is how it ended, e.g. "exit status 1" or "signal: killed".
	Status string
	// Tail is its last output lines.
	Tail []string
}

func (e *ProcessError) Error() string {
	return fmt.Sprintf("group %s (components %s, pid %d) exited: %s; last output:\n%s",
		e.Group, strings.Join(e.Components, ", "), e.PID, e.Status, indent(e.Tail))
}

// StderrTails maps the group to its last output lines, joined.
func (e *ProcessError) StderrTails() map[string]string {
	return map[string]string{e.Group: strings.Join(e.Tail, "\n")}
}

// Process is one child: one group of components.
type Process struct {
	// Name is the group's name (its components joined with "+").
	Name       string
	Components []string
	PID        int
	// Listen maps each of its components that is served on a listener
	// (called from another group, or the entry) to its endpoint, and
	// "gateway" to the gateway in the entry group.
	Listen map[string]runtime.Endpoint

	cmd      *exec.Cmd
	tail     *ring
	readDone chan struct{}
	done     chan struct{}
	waitErr  error
}

// Tail returns the last lines the process wrote to stdout or stderr.
func (p *Process) Tail() []string { return p.tail.lines() }

// Done is closed when the process has exited and its output is drained.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error (nil for status 0), valid after Done.
func (p *Process) Err() error { return p.waitErr }

// describe names the process for error messages.
func (p *Process) describe() string {
	return fmt.Sprintf("group %s (components %s, pid %d)", p.Name, strings.Join(p.Components, ", "), p.PID)
}

// exitError describes how the process ended, with its output tail; valid
// after Done.
func (p *Process) exitError() *ProcessError {
	status := "exit status 0"
	if p.waitErr != nil {
		status = p.waitErr.Error()
	}
	return &ProcessError{Group: p.Name, Components: p.Components, PID: p.PID, Status: status, Tail: p.Tail()}
}

// start launches one child.
func (d *Deployment) start(hc *runtime.HostConfig, files []*os.File, opts Options) (*Process, error) {
	cfg, err := json.Marshal(hc)
	if err != nil {
		return nil, fmt.Errorf("encode host config: %w", err)
	}
	args := append(slices.Clone(opts.Args), "--deployment", d.id, "--group", hc.Group)
	cmd := exec.Command(opts.Executable, args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Env = append(cmd.Env, runtime.HostConfigEnv+"="+string(cfg), runtime.DeploymentEnv+"="+d.id)
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a terminal's SIGINT goes to svclab
		// alone, which stops the children in order, and Stop can signal
		// the child and anything it started at once.
		Setpgid: true,
		// Dies with the thread that started it, which the spawner keeps
		// alive for the deployment's life: so with svclab, even on -9.
		Pdeathsig: syscall.SIGKILL,
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	var startErr error
	d.spawn.do(func() { startErr = cmd.Start() })
	_ = w.Close()
	if startErr != nil {
		_ = r.Close()
		return nil, fmt.Errorf("start %s: %w", opts.Executable, startErr)
	}
	proc := &Process{
		Name:       hc.Group,
		Components: hc.Components,
		PID:        cmd.Process.Pid,
		Listen:     map[string]runtime.Endpoint{},
		cmd:        cmd,
		tail:       newRing(opts.TailLines),
		readDone:   make(chan struct{}),
		done:       make(chan struct{}),
	}
	for c, l := range hc.Listen {
		proc.Listen[c] = l.Endpoint
	}
	if hc.Gateway != nil {
		proc.Listen["gateway"] = hc.Gateway.Endpoint
	}
	go proc.read(r, opts.Log)
	go proc.wait()
	return proc, nil
}

// read records the child's output until it closes.
func (p *Process) read(r *os.File, log io.Writer) {
	defer close(p.readDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			s := strings.TrimRight(string(line), "\r\n")
			p.tail.add(s)
			if log != nil {
				writeLine(log, "["+p.Name+"] "+s+"\n")
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// writeLine writes whole lines, so children's output does not interleave
// mid-line.
func writeLine(w io.Writer, s string) {
	logMu.Lock()
	defer logMu.Unlock()
	_, _ = io.WriteString(w, s)
}

// wait reaps the child, then waits (briefly) for its output to drain, so
// that an exit error carries the child's last words.
func (p *Process) wait() {
	p.waitErr = p.cmd.Wait()
	select {
	case <-p.readDone:
	case <-time.After(time.Second):
		// Something the child started still holds the pipe; the tail is
		// as complete as it will get.
	}
	close(p.done)
}

// watch reports children that exit before Stop.
func (d *Deployment) watch() {
	for _, p := range d.processes {
		go func() {
			select {
			case <-p.done:
				select {
				case <-d.stopping:
				default:
					d.exited <- p
				}
			case <-d.stopping:
			}
		}()
	}
}

// signalGroup signals the process group p leads, unless p has been reaped:
// its id may then belong to someone else.
func signalGroup(p *Process, sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.PID, sig)
	}
}

func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return "  (no output)"
	}
	return "  " + strings.Join(lines, "\n  ")
}
