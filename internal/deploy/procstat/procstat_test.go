package procstat_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy/procstat"
)

// TestMain makes the test binary a child that holds still until its
// stdin closes, when TestSharedPages starts it.
func TestMain(m *testing.M) {
	if os.Getenv("PROCSTAT_HOLD") == "1" {
		os.Stdout.WriteString("up\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

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

// TestSharedPages starts four copies of this test binary: each maps the
// same binary, so its pages count in full in every copy's RSS and a
// quarter in its PSS. PSS must be positive, at most RSS, and the copies'
// PSS must sum to clearly less than their RSS.
func TestSharedPages(t *testing.T) {
	r, err := procstat.Open()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	var pids []int
	for range n {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "PROCSTAT_HOLD=1")
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			in.Close()
			_ = cmd.Wait()
		})
		if _, err := out.Read(make([]byte, 3)); err != nil {
			t.Fatalf("child %d never said it was up: %v", cmd.Process.Pid, err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	var rss, pss int64
	for _, pid := range pids {
		u, err := r.Process(pid).Sample(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pid %d: RSS %.1f MiB, PSS %.1f MiB", pid, float64(u.RSSBytes)/(1<<20), float64(u.PSSBytes)/(1<<20))
		if u.PSSBytes <= 0 || u.PSSBytes > u.RSSBytes {
			t.Errorf("pid %d: PSS %d bytes, want more than 0 and at most RSS %d", pid, u.PSSBytes, u.RSSBytes)
		}
		rss += u.RSSBytes
		pss += u.PSSBytes
	}
	// The binary's pages a Go program touches to start are megabytes;
	// shared four ways, at least one of them leaves the sum.
	if rss-pss < 1<<20 {
		t.Errorf("%d copies of one binary: PSS sums to %d bytes, RSS to %d; want PSS at least 1 MiB less", n, pss, rss)
	}
}
