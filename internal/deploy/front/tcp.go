package front

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// TCP spreads connections over the replicas, round robin, for a protocol
// the front cannot read.
type TCP struct {
	lis     net.Listener
	dial    Dial
	targets atomic.Pointer[[]string]
	next    atomic.Uint64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartTCP serves the front on a free loopback port; it reaches the
// replicas at addrs with dial.
func StartTCP(addrs []string, dial Dial) (*TCP, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("front: listen: %w", err)
	}
	f := &TCP{lis: lis, dial: dial, conns: map[net.Conn]struct{}{}}
	f.Update(addrs)
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *TCP) serve() {
	defer f.wg.Done()
	for {
		c, err := f.lis.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

// relay joins client c to the next replica until either side closes.
func (f *TCP) relay(c net.Conn) {
	defer f.wg.Done()
	ts := *f.targets.Load()
	if len(ts) == 0 || !f.track(c) {
		_ = c.Close()
		return
	}
	defer f.untrack(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	up, err := f.dial(ctx, "tcp", ts[(f.next.Add(1)-1)%uint64(len(ts))])
	cancel()
	if err != nil {
		return
	}
	if !f.track(up) {
		_ = up.Close()
		return
	}
	defer f.untrack(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite() // the other way may still have bytes to send
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

func (f *TCP) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *TCP) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.Close()
}

// Update replaces the replicas with those at addrs; connections made
// stay where they are.
func (f *TCP) Update(addrs []string) {
	ts := append([]string(nil), addrs...)
	f.targets.Store(&ts)
}

// Addr is where clients reach the front.
func (f *TCP) Addr() string { return f.lis.Addr().String() }

// Close closes the front and every connection through it.
func (f *TCP) Close() error {
	err := f.lis.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("front: %w", err)
	}
	return nil
}
