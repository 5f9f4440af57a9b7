package procstat_test

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy/procstat"
)

// cpuTime is the calling process's CPU time by the kernel's own count.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestSelf(t *testing.T) {
	src, err := procstat.Self()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := src.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Burn 200 ms of CPU; /proc counts in 10 ms ticks.
	c0, x := cpuTime(), 0
	for cpuTime()-c0 < 200*time.Millisecond {
		for range 100_000 {
			x++
		}
	}
	after, err := src.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if used := after.CPUSeconds - before.CPUSeconds; used < 0.17 || used > 5 {
		t.Errorf("CPU seconds grew by %.3f over a 200 ms burn (x=%d)", used, x)
	}
	if after.RSSBytes < 1<<20 {
		t.Errorf("RSS %d bytes, want at least the megabyte a Go test binary holds", after.RSSBytes)
	}
}

func TestGone(t *testing.T) {
	r, err := procstat.Open()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("no `true` to run: %v", err)
	}
	// The child has been reaped, so its pid names no process (until the
	// kernel reuses it, which takes a wrap of the pid space).
	src := r.Process(cmd.Process.Pid)
	if u, err := src.Sample(context.Background()); err == nil {
		t.Errorf("sampled %+v from exited process %d, want an error", u, cmd.Process.Pid)
	}
	if _, err := r.Process(os.Getpid()).Sample(context.Background()); err != nil {
		t.Errorf("own process: %v", err)
	}
}
