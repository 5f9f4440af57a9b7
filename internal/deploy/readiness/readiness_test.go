package readiness

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/grpctransport"
)

func pass(context.Context) error { return nil }

func block(ctx context.Context) error {
	<-ctx.Done()
	return context.Cause(ctx)
}

// TestWait: every check passing is ready; an exit ends the wait at once
// with the exit; a failing check or the caller's deadline is a
// *NotReadyError that names the check (those still pending, for a
// deadline) and carries the tails.
func TestWait(t *testing.T) {
	exited := make(chan struct{})
	close(exited)
	exit := &deploy.ExitError{Process: deploy.ProcessInfo{Name: "b"}, Status: "exit status 3"}
	running := make(chan struct{})
	for _, tc := range []struct {
		name  string
		procs []Process
		want  []string // in the error; nil: ready
		exit  bool
	}{
		{"ready", []Process{
			{Name: "a", Done: running, Checks: []Check{{"x", pass}, {"y", pass}}},
			{Name: "b", Done: running},
		}, nil, false},
		{"exit", []Process{
			{Name: "a", Done: running, Checks: []Check{{"x", block}}},
			{Name: "b", Done: exited, Exit: func() error { return exit }, Checks: []Check{{"y", block}}},
		}, []string{"exit status 3"}, true},
		{"check fails", []Process{
			{Name: "a", Done: running, Checks: []Check{{"x on tcp://1", func(context.Context) error { return errors.New("refused") }}, {"y", block}}},
		}, []string{"a: x on tcp://1: refused", "group a last output:\n  out"}, false},
		{"deadline", []Process{
			{Name: "a", Done: running, Checks: []Check{{"x", pass}, {"y", block}}},
			{Name: "b", Done: running, Checks: []Check{{"z", block}}},
		}, []string{"context deadline exceeded, waiting for a: y; b: z"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := Wait(ctx, tc.procs, func() map[string]string { return map[string]string{"a": "out"} })
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Wait = %v, want ready", err)
				}
				return
			}
			var nr *NotReadyError
			if tc.exit {
				if !errors.Is(err, exit) || errors.As(err, &nr) || time.Since(start) > 200*time.Millisecond {
					t.Fatalf("Wait = %v after %s, want the exit at once", err, time.Since(start))
				}
			} else if !errors.As(err, &nr) || nr.StderrTails()["a"] != "out" {
				t.Fatalf("Wait = %#v, want a *NotReadyError with the tails", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestWaitStopped: a start the caller stops (a user's Ctrl-C) says so,
// with the cause, and shows no process's output as a failure would.
func TestWaitStopped(t *testing.T) {
	running := make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.Background())
	interrupted := errors.New("interrupt signal received")
	time.AfterFunc(50*time.Millisecond, func() { cancel(interrupted) })
	var tails atomic.Int32
	err := Wait(ctx, []Process{
		{Name: "a", Done: running, Checks: []Check{{"x", pass}, {"y", block}}},
		{Name: "b", Done: running, Checks: []Check{{"z", block}}},
	}, func() map[string]string { tails.Add(1); return map[string]string{"a": "out"} })
	var nr *NotReadyError
	if !errors.Is(err, interrupted) || errors.As(err, &nr) || tails.Load() != 0 {
		t.Fatalf("Wait = %v (tails read %d times), want the interrupt without tails", err, tails.Load())
	}
	if want := "start stopped with 2 of its checks not yet passed: interrupt signal received"; err.Error() != want {
		t.Errorf("Wait = %q, want %q", err, want)
	}
}

// TestLine: the check passes once the tail holds the line, and says what
// it waited for when its context ends first.
func TestLine(t *testing.T) {
	var lines atomic.Pointer[[]string]
	lines.Store(&[]string{"starting"})
	got := make(chan error, 1)
	go func() { got <- Line(func() []string { return *lines.Load() }, "ready")(context.Background()) }()
	time.Sleep(30 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("passed before the line: %v", err)
	default:
	}
	lines.Store(&[]string{"starting", "host ready on 1 listener"})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Line(func() []string { return nil }, "ready")(ctx); err == nil || !strings.Contains(err.Error(), "not printed") {
		t.Errorf("Line without the line = %v", err)
	}
}

// TestHealth asks a real gRPC health service: NOT_SERVING keeps the check
// waiting until the server says SERVING.
func TestHealth(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	ep := runtime.Endpoint{Transport: "grpc", Network: "tcp", Addr: lis.Addr().String()}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := Health(ep, transport.DialOptions{})(ctx); err == nil || !strings.Contains(err.Error(), "NOT_SERVING") {
		t.Fatalf("Health of a NOT_SERVING server = %v", err)
	}
	time.AfterFunc(50*time.Millisecond, func() { hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING) })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := Health(ep, transport.DialOptions{})(ctx2); err != nil {
		t.Fatalf("Health once SERVING = %v", err)
	}
}
