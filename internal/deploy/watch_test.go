package deploy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// exiting is a deployment whose processes exit when the test says so.
type exiting struct {
	deploy.Deployment
	exited chan deploy.Process
}

func (d exiting) Exited() <-chan deploy.Process { return d.exited }

// gone is a process that has exited.
type gone struct {
	deploy.Process
	exit *deploy.ExitError
}

func (p gone) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
func (p gone) Exit() *deploy.ExitError { return p.exit }

// TestWatch: a process's exit ends the watch's context with the exit as
// its cause; the parent's end, or cancel, ends it with none.
func TestWatch(t *testing.T) {
	d := exiting{exited: make(chan deploy.Process, 1)}
	ctx, cancel := deploy.Watch(context.Background(), d)
	defer cancel(nil)
	if deploy.Crash(ctx) != nil || ctx.Err() != nil {
		t.Fatal("the watch ended before any process exited")
	}
	exit := &deploy.ExitError{Process: deploy.ProcessInfo{Name: "hop2", Group: "hop2"}, Status: "exit status 1"}
	d.exited <- gone{exit: exit}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("an exit did not end the watch")
	}
	var ee *deploy.ExitError
	if deploy.Crash(ctx) != exit || !errors.As(context.Cause(ctx), &ee) {
		t.Errorf("cause %v, want the exit", context.Cause(ctx))
	}

	parent, stop := context.WithCancel(context.Background())
	ctx2, cancel2 := deploy.Watch(parent, exiting{exited: make(chan deploy.Process)})
	defer cancel2(nil)
	stop()
	<-ctx2.Done()
	if deploy.Crash(ctx2) != nil {
		t.Errorf("the parent's end is no crash: %v", context.Cause(ctx2))
	}
}
