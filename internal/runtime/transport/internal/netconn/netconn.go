// Package netconn holds the socket handling of the transports that speak
// their own protocol over a plain byte stream (netrpc, protorpc): a
// server's accept loop, which tracks listeners and connections so that
// Stop can close them, and a client's dial, TLS handshake included.
package netconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Acceptor runs a server's accept loops and closes everything they
// opened at Stop. The zero value is ready.
type Acceptor struct {
	mu        sync.Mutex
	stopped   bool
	listeners map[net.Listener]bool
	conns     map[net.Conn]bool
}

// Serve accepts connections on lis until Stop, and runs serve on a
// goroutine of its own for each, wrapped in TLS when cfg is set (the
// handshake then happens on serve's first read or write). serve owns the
// connection; Stop closes it too. Serve returns nil after Stop.
func (a *Acceptor) Serve(lis net.Listener, cfg *tls.Config, serve func(net.Conn)) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		lis.Close()
		return nil
	}
	if a.listeners == nil {
		a.listeners, a.conns = map[net.Listener]bool{}, map[net.Conn]bool{}
	}
	a.listeners[lis] = true
	a.mu.Unlock()
	var delay time.Duration // backoff on temporary accept errors, as net/http does
	for {
		c, err := lis.Accept()
		if err != nil {
			a.mu.Lock()
			stopped := a.stopped
			a.mu.Unlock()
			if stopped {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("accept on %s: %w", lis.Addr(), err)
		}
		delay = 0
		if cfg != nil {
			c = tls.Server(c, cfg)
		}
		a.mu.Lock()
		if a.stopped {
			a.mu.Unlock()
			c.Close()
			return nil
		}
		a.conns[c] = true
		a.mu.Unlock()
		go func() {
			serve(c)
			a.mu.Lock()
			delete(a.conns, c)
			a.mu.Unlock()
		}()
	}
}

// Stop closes the listeners and the connections, and makes later Serve
// calls return at once.
func (a *Acceptor) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	for l := range a.listeners {
		l.Close()
	}
	for c := range a.conns {
		c.Close()
	}
}

// Dial connects to addr and, when cfg is set, completes a TLS handshake,
// both within ctx. A cfg without a ServerName gets addr's host, or for a
// unix socket, whose path names no host, "localhost", which is what the
// deployer's certificates are for.
//
// dial opens the connection; nil means a net.Dialer's.
func Dial(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), network, addr string, cfg *tls.Config) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s %s: %w", network, addr, err)
	}
	if cfg == nil {
		return nc, nil
	}
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName = "localhost"
		if host, _, err := net.SplitHostPort(addr); err == nil && network != "unix" {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
