package ports

import (
	"net"
	"testing"
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
