// Package front is one stable loopback address before the replicas of a
// server, as a Kubernetes Service before its pods, which its owner keeps
// on the live replicas (Update). HTTP spreads requests, not connections,
// round robin: a Service's kube-proxy spreads connections, which leaves a
// client that multiplexes its calls over one HTTP/2 connection (the load
// generator's h2c, any gRPC client) on a single replica — the well-known
// gap a mesh closes by balancing per request, which is what a user
// comparing replicas needs to see. TCP, for a protocol it cannot read
// (Redis's, say), spreads connections.
//
// The local deployer puts an HTTP front before a replicated entry's
// gateways; the exec app's programs (internal/deploy/program), one before
// each replicated program.
package front

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Dial reaches a replica.
type Dial func(ctx context.Context, network, addr string) (net.Conn, error)

// HTTP is a reverse proxy over the replicas, per request, round robin.
// It takes HTTP/1.1 and h2c.
type HTTP struct {
	lis     net.Listener
	srv     *http.Server
	targets atomic.Pointer[[]*url.URL]
	next    atomic.Uint64
}

// StartHTTP serves the front on a free loopback port; it reaches the
// replicas at addrs with dial, over HTTP/1.1, or over h2c with h2c (a
// gRPC server's).
func StartHTTP(addrs []string, dial Dial, h2c bool) (*HTTP, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("front: listen: %w", err)
	}
	f := &HTTP{lis: lis}
	f.Update(addrs)
	tr := &http.Transport{
		DialContext:         dial,
		MaxIdleConnsPerHost: 1024,
		DisableCompression:  true,
	}
	if h2c {
		var up http.Protocols
		up.SetUnencryptedHTTP2(true)
		tr.Protocols = &up
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(f.pick())
			r.Out.Host = r.In.Host
		},
		Transport: tr,
		// Without a pool, ReverseProxy allocates (and zeroes) a 32 KiB
		// copy buffer per request.
		BufferPool: copyBuffers{},
		// A gRPC stream's messages go through as they come.
		FlushInterval: flushInterval(h2c),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// UNAVAILABLE in the http transport's mapping: a replica that
			// went away between its death and the owner's update.
			http.Error(w, "front: "+err.Error(), http.StatusServiceUnavailable)
		},
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // h2c clients: the load generator's, gRPC's
	f.srv = &http.Server{Handler: proxy, Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(lis) }()
	return f, nil
}

func flushInterval(h2c bool) time.Duration {
	if h2c {
		return -1
	}
	return 0
}

// pick is the next target, round robin; one that cannot resolve when
// there is none (the proxy then fails the request with 503).
func (f *HTTP) pick() *url.URL {
	ts := *f.targets.Load()
	if len(ts) == 0 {
		return &url.URL{Scheme: "http", Host: "no-live-replica.invalid"}
	}
	return ts[(f.next.Add(1)-1)%uint64(len(ts))]
}

// Update replaces the replicas with those at addrs.
func (f *HTTP) Update(addrs []string) {
	ts := make([]*url.URL, 0, len(addrs))
	for _, a := range addrs {
		ts = append(ts, &url.URL{Scheme: "http", Host: a})
	}
	f.targets.Store(&ts)
}

// copyBuffers lends the proxy its body copy buffers.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (copyBuffers) Get() []byte  { return *copyBufferPool.Get().(*[]byte) }
func (copyBuffers) Put(b []byte) { copyBufferPool.Put(&b) }

// Addr is where clients reach the front.
func (f *HTTP) Addr() string { return f.lis.Addr().String() }

// Close closes the front and its connections.
func (f *HTTP) Close() error {
	if err := f.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("front: %w", err)
	}
	return nil
}
