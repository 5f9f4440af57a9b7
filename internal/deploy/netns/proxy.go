package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/rs/zerolog"
)

// proxy stands for one emulated link on one path: it accepts connections
// on its listener and relays each to its upstream through toxiproxy's
// toxic chain (a link per direction). toxiproxy's own Proxy listens and
// dials from whatever thread runs it; here both happen inside the
// namespaces the path needs, so the accept loop is this package's and
// the relaying is toxiproxy's.
type proxy struct {
	lis  net.Listener
	dial func(ctx context.Context) (net.Conn, error)
	tp   *toxiproxy.Proxy

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// toxiServer is the toxiproxy server every proxy belongs to: it carries
// their (disabled) metrics and their logger, which is silent.
var toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())

func newProxy(name string, lis net.Listener, upstream string, dial func(ctx context.Context) (net.Conn, error)) *proxy {
	tp := toxiproxy.NewProxy(toxiServer, name, lis.Addr().String(), upstream)
	nop := zerolog.Nop()
	tp.Logger = &nop
	return &proxy{lis: lis, dial: dial, tp: tp, conns: map[net.Conn]struct{}{}}
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

// serve accepts until close.
func (p *proxy) serve() {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.lis.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.relay(c)
			}()
		}
	}()
}

// dialTimeout bounds one upstream connection attempt.
const dialTimeout = 5 * time.Second

func (p *proxy) relay(c net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	up, err := p.dial(ctx)
	cancel()
	if err != nil {
		c.Close()
		return
	}
	down, upc := &tracked{Conn: c, p: p}, &tracked{Conn: up, p: p}
	if !p.track(down, upc) {
		return
	}
	name := c.RemoteAddr().String()
	p.tp.Toxics.StartLink(toxiServer, name+"upstream", down, upc, stream.Upstream)
	p.tp.Toxics.StartLink(toxiServer, name+"downstream", upc, down, stream.Downstream)
}

// tracked is a relayed connection that leaves the proxy's set when
// toxiproxy closes it.
type tracked struct {
	net.Conn
	p    *proxy
	once sync.Once
	// stampOnce asks the socket for arrival stamps, once (arrival.go).
	stampOnce sync.Once
	stamped   bool
}

func (c *tracked) Close() error {
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
	return c.Conn.Close()
}

// track records a connection pair for close; false (and both closed) when
// the proxy is closing.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	p.mu.Unlock()
	return true
}

// close stops accepting and closes every connection, which ends
// toxiproxy's links.
func (p *proxy) close() error {
	p.mu.Lock()
	p.closed = true
	err := p.lis.Close()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("proxy %s: %w", p.tp.Name, err)
	}
	return nil
}
