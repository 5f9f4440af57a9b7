package program

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/child"
	"github.com/svclab/svclab/internal/runtime"
)

// tailLines is how many of a program's last output lines are kept, for
// the error of a program that exits.
const tailLines = 40

// maxLine bounds one recorded line of output.
const maxLine = 4096

// process is one running program, a deploy.Process.
type process struct {
	// component is the component the program is a replica of, addr
	// where it listens.
	component, addr string

	info   deploy.ProcessInfo
	listen map[string]runtime.Endpoint
	res    deploy.ResourceSource
	cg     *cgroup.Group // nil without limits
	c      *child.Child
	// readyAt is when it passed its health check.
	readyAt time.Time
	// retired is set when a kill fault or a scale-in ends the process:
	// its exit is no failure.
	retired atomic.Bool

	mu   sync.Mutex
	tail []string

	readDone chan struct{}
	done     chan struct{}
}

func (p *process) Info() deploy.ProcessInfo               { return p.info }
func (p *process) Listeners() map[string]runtime.Endpoint { return p.listen }
func (p *process) Resources() deploy.ResourceSource       { return p.res }
func (p *process) Done() <-chan struct{}                  { return p.done }

// Tail is the program's last lines on stdout and stderr.
func (p *process) Tail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.tail)
}

// Exit says how the program ended; valid after Done.
func (p *process) Exit() *deploy.ExitError {
	status := "exit status 0"
	if err := p.c.Err(); err != nil {
		status = err.Error()
	}
	return &deploy.ExitError{Process: p.info, Status: status, Tail: p.Tail()}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// launch is what starts one program: its argv and environment expanded,
// its working directory absolute.
type launch struct {
	name string
	argv []string
	env  []string
	dir  string
	log  io.Writer
	// enter, when not nil, moves the forking thread to where the program
	// must start (deploy.Network.Enter).
	enter func() (leave func() error, err error)
}

// start starts the program in a process group of its own. Its
// parent-death signal is SIGTERM, so that a program whose master forks
// workers (nginx) takes them with it when svclab dies; one that ignores
// SIGTERM is left to the next start's sweep (sweep.go), which its
// environment's owner mark lets find it.
func start(l launch, newRes func(pid int) deploy.ResourceSource) (*process, error) {
	cmd := exec.Command(l.argv[0], l.argv[1:]...)
	cmd.Dir = l.dir
	cmd.Env = l.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s: output pipe: %w", l.name, err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	c, err := child.StartIn(cmd, l.enter)
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("start component %s: %w", l.name, err)
	}
	p := &process{
		info: deploy.ProcessInfo{
			Name:       l.name,
			Group:      l.name,
			Role:       deploy.RoleHost,
			Components: []string{l.name},
			PID:        c.Process.Pid,
		},
		listen:   map[string]runtime.Endpoint{},
		res:      newRes(c.Process.Pid),
		c:        c,
		readDone: make(chan struct{}),
		done:     make(chan struct{}),
	}
	go p.read(r, l.log)
	go func() {
		<-c.Done()
		select {
		case <-p.readDone:
		case <-time.After(time.Second):
			// Something the program started still holds the pipe.
		}
		close(p.done)
	}()
	return p, nil
}

var logMu sync.Mutex

// read keeps the program's last lines, and copies each to log.
func (p *process) read(r *os.File, log io.Writer) {
	defer close(p.readDone)
	defer r.Close()
	child.ReadLines(r, maxLine, func(s string) {
		p.mu.Lock()
		p.tail = append(p.tail, s)
		if len(p.tail) > tailLines {
			p.tail = p.tail[len(p.tail)-tailLines:]
		}
		p.mu.Unlock()
		if log != nil {
			logMu.Lock()
			_, _ = io.WriteString(log, "["+p.info.Name+"] "+s+"\n")
			logMu.Unlock()
		}
	})
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs the process group.
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	err := p.c.Stop(ctx, syscall.SIGTERM, grace)
	<-p.done
	if err != nil {
		err = fmt.Errorf("%s: %w; last output:\n%s", p.info, err, deploy.IndentTail(p.Tail()))
	}
	if p.cg != nil {
		err = errors.Join(err, p.cg.Remove())
	}
	return err
}

// lookCommand finds argv0 as exec would, from dir: a name with a slash
// relative to dir, another on PATH.
func lookCommand(argv0, dir string) (string, error) {
	if !strings.Contains(argv0, "/") {
		return exec.LookPath(argv0)
	}
	path := argv0
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "", err
	case st.IsDir():
		return "", fmt.Errorf("%s is a directory", path)
	case st.Mode()&0o111 == 0:
		return "", fmt.Errorf("%s is not executable", path)
	}
	return path, nil
}
