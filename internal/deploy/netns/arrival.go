package netns

import (
	"encoding/binary"
	"io"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A link's delay counts from when a chunk reached the proxy, but toxiproxy
// stamps a chunk when its reading goroutine gets it, which on a link that
// idles between messages is a goroutine woken from sleep: tens of
// microseconds on a busy machine, hundreds on an idle VM whose vCPUs halt.
// That wake-up is the relay's own cost, paid on every crossing and on top
// of the emulated delay (measured 2026-11-23: about 0.1 ms per crossing
// at load 25, the bulk of the 0.5–0.8 ms a round trip over 2–10 ms links
// overshot on an idle machine). So the proxy's sockets ask the kernel for
// each segment's arrival time (SO_TIMESTAMPNS), every read measures how
// long after arrival it returned, and the link toxic counts its delay from
// the arrival: stamp minus readLate, a running mean (weight 1/8) of that
// wake-up, shared by the proxies of this process as they share its
// machine.
var readLate atomic.Int64

// maxReadLate bounds the estimate: a read held up for milliseconds by a
// machine that is very busy is noise to ride out, and a chunk must never
// be sent far ahead of its time.
const maxReadLate = time.Millisecond

// arrivalLate is what the toxic takes off a chunk's stamp.
func arrivalLate() time.Duration { return time.Duration(readLate.Load()) }

func learnReadLate(late time.Duration) {
	late = min(max(late, 0), maxReadLate)
	for {
		old := readLate.Load()
		next := old + (int64(late)-old)/8
		if readLate.CompareAndSwap(old, next) {
			return
		}
	}
}

// Read reads as the connection's own Read does, and learns from the
// kernel's arrival stamp how late this read returned. A socket without
// stamps (not TCP, or the option refused) reads plainly.
func (c *tracked) Read(b []byte) (int, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return c.Conn.Read(b)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c.Conn.Read(b)
	}
	c.stampOnce.Do(func() {
		_ = rc.Control(func(fd uintptr) {
			c.stamped = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil
		})
	})
	if !c.stamped {
		return c.Conn.Read(b)
	}
	n, at, err := recvStamped(rc, b)
	if err != nil {
		return n, err
	}
	if !at.IsZero() {
		learnReadLate(time.Since(at))
	}
	return n, nil
}

// recvStamped reads into b from a socket with SO_TIMESTAMPNS set, waiting
// as a Read does, and returns the kernel's arrival stamp of the data (zero
// when it gave none).
func recvStamped(rc syscall.RawConn, b []byte) (int, time.Time, error) {
	var (
		n, oobn int
		rerr    error
		oob     [64]byte
	)
	err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, oob[:], 0)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	if n == 0 && len(b) > 0 {
		return 0, time.Time{}, io.EOF
	}
	at, _ := arrival(oob[:oobn])
	return n, at, nil
}

// arrival parses the SCM_TIMESTAMPNS message of a read.
func arrival(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			// struct timespec: two native longs (64-bit Linux).
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			if sec == 0 && nsec == 0 {
				return time.Time{}, false
			}
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}
