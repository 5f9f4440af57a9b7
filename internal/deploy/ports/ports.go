// Package ports picks loopback ports for programs that bind their own
// listeners (proxies, Java and Python hosts, the telemetry programs), from
// below the kernel's ephemeral range.
package ports

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Ports for programs that bind their own listeners (proxies, Java and
// Python hosts, Jaeger) are picked by svclab, then released just before
// the program binds them. A port the kernel hands out for bind(0) or
// connect could be handed to someone else in between, and on a busy
// machine (many deployments at once, as in the test suite) it was: an
// Envoy sidecar failed with "address already in use". So these ports come
// from below the kernel's ephemeral range, which it never assigns by
// itself; only another program picking at random there could collide,
// and svclab's own processes do not (recent).
const (
	pickLow      = 20000 // the lowest port picked
	pickAttempts = 64
)

// Listen listens on a free loopback port below the ephemeral range,
// or on one the kernel picks when that range leaves no room below it.
func Listen() (net.Listener, error) {
	high := ephemeralLow()
	if high-pickLow < 1000 {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var last error
	for range pickAttempts {
		p := pickLow + rand.IntN(high-pickLow)
		ok, err := recent.take(p, time.Now())
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("no free port among %d tried below %d: %w", pickAttempts, high, last)
}

// recent holds the ports picked lately by any svclab process on this
// machine. Free releases its ports before their program binds them, and
// a deployment beside it could draw the same port in that gap: with
// thousands of picks a run, one in this process did, and later one in
// another test process did (a Python host's "address already in use").
// So each pick is reserved by an abstract unix socket named for the port:
// other processes see it, and the kernel drops it when this one exits,
// leaving no file behind.
var recent = reservations{name: "svclab-port-", max: heldAtMost()}

// reserve is how long a picked port is not picked again by svclab:
// longer than any program takes to bind the port it was given.
// maxHeld bounds the sockets one process holds for that (heldAtMost).
const (
	reserve = 5 * time.Minute
	maxHeld = 4096
)

// heldAtMost is maxHeld, or a quarter of the process's file descriptor
// limit when that is less, so that reservations never take the
// descriptors the process's own work needs.
func heldAtMost() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil && l.Cur/4 < maxHeld {
		return max(int(l.Cur/4), 1)
	}
	return maxHeld
}

type reservations struct {
	name string // the abstract sockets' prefix
	max  int    // the most held at once
	mu   sync.Mutex
	held []reservation // oldest first
}

type reservation struct {
	c  io.Closer
	at time.Time
}

// take reserves port as picked at now, unless some svclab process
// reserved it within reserve. It first drops this process's reservations
// older than that, and the oldest beyond max.
func (r *reservations) take(port int, now time.Time) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for n < len(r.held) && (now.Sub(r.held[n].at) >= reserve || len(r.held)-n >= r.max) {
		r.held[n].c.Close()
		n++
	}
	r.held = slices.Delete(r.held, 0, n)
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + r.name + strconv.Itoa(port), Net: "unixgram"})
	if errors.Is(err, syscall.EADDRINUSE) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reserve port %d: %w", port, err)
	}
	r.held = append(r.held, reservation{c: c, at: now})
	return true, nil
}

// ephemeralLow is the first port of net.ipv4.ip_local_port_range, or
// Linux's default when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 0 && n <= 65535 {
				return n
			}
		}
	}
	return 32768
}

// Free picks n free loopback ports (Listen) and releases them, as
// host:port. A port could be taken between this and the program's bind;
// the program then fails to start, and says so.
func Free(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := Listen()
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}
