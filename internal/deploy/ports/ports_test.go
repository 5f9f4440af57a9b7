package ports

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestListen: picked ports lie below the kernel's ephemeral range,
// where bind(0) and connect never land, and 200 held at once are distinct
// listeners the kernel accepted.
func TestListen(t *testing.T) {
	t.Parallel()
	high := ephemeralLow()
	if high-pickLow < 1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it", high)
	}
	seen := map[int]bool{}
	for range 200 {
		l, err := Listen()
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p := l.Addr().(*net.TCPAddr).Port
		if p < pickLow || p >= high || seen[p] {
			t.Fatalf("port %d: want a new one in [%d, %d)", p, pickLow, high)
		}
		seen[p] = true
	}
}

// TestPicksNotRepeated: a port picked and released is not picked again by
// svclab until reserve has passed, so a deployment beside another does
// not draw a port the other is about to bind. A second reservations
// stands for another process: both reserve in the same abstract sockets.
func TestPicksNotRepeated(t *testing.T) {
	name := fmt.Sprintf("svclab-port-test-%d-", os.Getpid())
	r := reservations{name: name, max: 100}
	other := reservations{name: name, max: 100}
	t.Cleanup(func() { r.drop(); other.drop() })
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		r     *reservations
		port  int
		after time.Duration
		want  bool
	}{
		{&r, 20001, 0, true},
		{&r, 20001, time.Second, false},
		{&other, 20001, time.Second, false},
		{&r, 20002, time.Second, true},
		{&r, 20001, reserve - time.Millisecond, false},
		{&r, 20001, reserve, true},
		{&r, 20002, reserve, false},
		{&other, 20002, reserve, false},
		{&r, 20002, reserve + time.Second, true},
	} {
		got, err := tc.r.take(tc.port, t0.Add(tc.after))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("take(%d) at +%v = %v, want %v", tc.port, tc.after, got, tc.want)
		}
	}
	if len(r.held) != 2 {
		t.Errorf("%d picks held, want the 2 within reserve", len(r.held))
	}
	// Free's ports, released, are not among the next picks.
	first, err := Free(50)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Free(50)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range second {
		if slices.Contains(first, a) {
			t.Errorf("port %s picked twice within a second", a)
		}
	}
}

// TestHeldAtMost: beyond max, the oldest reservation is let go.
func TestHeldAtMost(t *testing.T) {
	name := fmt.Sprintf("svclab-port-max-%d-", os.Getpid())
	r := reservations{name: name, max: 2}
	other := reservations{name: name, max: 2}
	t.Cleanup(func() { r.drop(); other.drop() })
	now := time.Now()
	for _, p := range []int{20001, 20002, 20003} {
		if ok, err := r.take(p, now); !ok || err != nil {
			t.Fatalf("take(%d) = %v, %v", p, ok, err)
		}
	}
	for _, tc := range []struct {
		port int
		want bool
	}{{20001, true}, {20002, false}, {20003, false}} {
		if got, err := other.take(tc.port, now); got != tc.want || err != nil {
			t.Errorf("another process's take(%d) = %v, %v; want %v", tc.port, got, err, tc.want)
		}
	}
}

// TestReservedAcrossProcesses: a port another process picked is not
// picked here until that process exits, and its exit leaves it free.
func TestReservedAcrossProcesses(t *testing.T) {
	name := fmt.Sprintf("svclab-port-proc-%d-", os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldForParent$")
	cmd.Env = append(os.Environ(), "SVCLAB_PORTS_HOLD="+name)
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
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("child: %q, %v", line, err)
	}
	r := reservations{name: name, max: 10}
	t.Cleanup(r.drop)
	if ok, err := r.take(20001, time.Now()); ok || err != nil {
		t.Errorf("take while the child holds it = %v, %v; want false", ok, err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if ok, err := r.take(20001, time.Now()); !ok || err != nil {
		t.Errorf("take after the child exited = %v, %v; want true", ok, err)
	}
}

// TestHoldForParent is TestReservedAcrossProcesses's child: it reserves
// port 20001 and holds it until its stdin closes.
func TestHoldForParent(t *testing.T) {
	name := os.Getenv("SVCLAB_PORTS_HOLD")
	if name == "" {
		t.Skip("run by TestReservedAcrossProcesses")
	}
	r := reservations{name: name, max: 10}
	if ok, err := r.take(20001, time.Now()); !ok || err != nil {
		t.Fatalf("take = %v, %v", ok, err)
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
}

// drop lets go of every reservation r holds.
func (r *reservations) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.held {
		h.c.Close()
	}
	r.held = nil
}

// TestHeldWithinTheLimit: with a low file descriptor limit, reservations
// take at most a quarter of it.
func TestHeldWithinTheLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	for _, tc := range []struct {
		cur  uint64
		want int
	}{{400, 100}, {2, 1}, {1 << 20, maxHeld}} {
		if tc.cur > old.Max {
			continue
		}
		l := syscall.Rlimit{Cur: tc.cur, Max: old.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			t.Fatal(err)
		}
		if got := heldAtMost(); got != tc.want {
			t.Errorf("limit %d: heldAtMost() = %d, want %d", tc.cur, got, tc.want)
		}
	}
}
