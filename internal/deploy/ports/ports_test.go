package ports

import (
	"net"
	"slices"
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
// this process until reserve has passed, so a deployment beside another
// does not draw a port the other is about to bind.
func TestPicksNotRepeated(t *testing.T) {
	r := picks{at: map[int]time.Time{}}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		port  int
		after time.Duration
		want  bool
	}{
		{20001, 0, true},
		{20001, time.Second, false},
		{20002, time.Second, true},
		{20001, reserve - time.Millisecond, false},
		{20001, reserve, true},
		{20002, reserve, false},
		{20002, reserve + time.Second, true},
	} {
		if got := r.take(tc.port, t0.Add(tc.after)); got != tc.want {
			t.Errorf("take(%d) at +%v = %v, want %v", tc.port, tc.after, got, tc.want)
		}
	}
	if len(r.at) != 2 {
		t.Errorf("%d picks remembered, want the 2 within reserve", len(r.at))
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
