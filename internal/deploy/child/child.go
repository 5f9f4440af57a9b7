// Package child starts helper processes that must not outlive svclab (a
// database server, an ingress proxy): each in its own process group, with a
// parent-death signal of SIGKILL, forked from a thread that lives as long
// as the child does. Linux delivers the parent-death signal when the
// *thread* that forked the child exits, and Go may end a thread whose
// goroutine exits while locked to it; a thread that waits for the child
// and nothing else ends only after it.
//
// What the child started in its group ends with it: the group gets
// SIGKILL once the child has exited and before it is reaped, while its
// zombie still holds the group's id (internal/procgroup says why no
// group is signalled after the reap); KeepLeftovers leaves it running
// unless Stop asked for the child's end first.
package child

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/procgroup"
)

// Child is a started process.
type Child struct {
	Process *os.Process
	group   *procgroup.Leader
	done    chan struct{}
	err     error
}

// Option changes how Start runs a child.
type Option func(*options)

type options struct{ keep bool }

// KeepLeftovers leaves what the child started in its group running when
// the child exits of its own accord (a setup command's background
// server, which is the system's); once Stop has been called, the child's
// exit ends its group all the same.
func KeepLeftovers() Option { return func(o *options) { o.keep = true } }

// Start starts cmd as a Child. cmd.SysProcAttr, when set, keeps its other
// fields (credentials, say, or a Pdeathsig of SIGTERM for a program whose
// master must take its workers with it); Setpgid is set here, and
// Pdeathsig to SIGKILL unless set.
func Start(cmd *exec.Cmd, opts ...Option) (*Child, error) { return StartIn(cmd, nil, opts...) }

// StartIn starts cmd as Start does, from a thread that enter, when not
// nil, first moves where the child must start (a network namespace,
// which a child inherits from the thread that forks it); the leave it
// returns moves the thread back once the child has started. The thread
// stays locked to its goroutine, which ends with the child, so a thread
// that leave could not move back is discarded with it.
func StartIn(cmd *exec.Cmd, enter func() (leave func() error, err error), opts ...Option) (*Child, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	c := &Child{group: procgroup.New(cmd), done: make(chan struct{})}
	if !o.keep {
		c.group.EndGroup()
	}
	started := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		err := start(cmd, enter)
		if err != nil {
			started <- err
			close(c.done)
			return
		}
		c.Process = cmd.Process
		started <- nil
		c.err = c.group.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// start starts cmd from the calling thread, moved by enter when not nil.
func start(cmd *exec.Cmd, enter func() (func() error, error)) error {
	if enter == nil {
		return cmd.Start()
	}
	leave, err := enter()
	if err != nil {
		return err
	}
	err = cmd.Start()
	// A thread that leave cannot move back ends with its goroutine, which
	// never unlocks it; the child runs where it should either way.
	_ = leave()
	return err
}

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is how the child exited; valid once Done is closed.
func (c *Child) Err() error { return c.err }

// SignalGroup sends sig to the child's process group while the child is
// not yet reaped; after that it sends nothing and returns
// os.ErrProcessDone (procgroup.Leader.Signal).
func (c *Child) SignalGroup(sig syscall.Signal) error { return c.group.Signal(sig) }

// Stop sends sig, waits up to grace (or until ctx ends) for the child to
// exit, then SIGKILLs its process group, which also takes whatever it
// forked; what the child leaves in its group when it exits ends with it
// (before its reap), KeepLeftovers or not. It returns an error when the
// child had to be killed; a child that has exited already is left as it
// is. Safe to call more than once.
func (c *Child) Stop(ctx context.Context, sig syscall.Signal, grace time.Duration) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	c.group.EndGroup()
	_ = c.Process.Signal(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	var err error
	select {
	case <-c.done:
		return nil
	case <-t.C:
		err = fmt.Errorf("pid %d did not stop on %v within %s; killed", c.Process.Pid, sig, grace)
	case <-ctx.Done():
		err = fmt.Errorf("pid %d: stop: %w; killed", c.Process.Pid, ctx.Err())
	}
	_ = c.group.Signal(syscall.SIGKILL)
	<-c.done
	return err
}

// ReadLines calls each with every line r gives until it ends, without its
// line end. A line longer than max bytes comes in pieces of max bytes, so
// a child that writes without newlines cannot grow the buffer.
func ReadLines(r io.Reader, max int, each func(line string)) {
	br := bufio.NewReaderSize(r, max)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			each(strings.TrimRight(string(line), "\r\n"))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
