package local

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

// The gateway of a replicated entry. Every replica of the entry group
// serves the HTTP/JSON gateway; clients reach them all through one stable
// loopback address, as pods behind a Kubernetes Service, which the deployer
// keeps on the live replicas as it keeps the callers' endpoint sets
// (pushPeers). It spreads requests, not connections, round robin: a
// Service's kube-proxy spreads connections, which leaves a client that
// multiplexes its calls over one HTTP/2 connection (the load generator's
// h2c, any gRPC client) on a single pod — the well-known gap a mesh closes
// by balancing per request, which is what a user comparing replicas needs
// to see here. An entry group that can only ever have one process gets no
// front: its gateway is reached directly, as before.

// gatewayFront is a reverse proxy over the entry replicas' gateways.
type gatewayFront struct {
	lis     net.Listener
	srv     *http.Server
	targets atomic.Pointer[[]*url.URL]
	next    atomic.Uint64
}

// startGatewayFront serves the front on a free loopback port; it reaches
// the gateways with dial.
func startGatewayFront(addrs []string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*gatewayFront, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gateway front: listen: %w", err)
	}
	f := &gatewayFront{lis: lis}
	f.update(addrs)
	tr := &http.Transport{
		DialContext:         dial,
		MaxIdleConnsPerHost: 1024,
		DisableCompression:  true,
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
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// UNAVAILABLE in the http transport's mapping: a replica that
			// went away between its death and the deployer's update.
			http.Error(w, "gateway front: "+err.Error(), http.StatusServiceUnavailable)
		},
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // h2c targets of the load generator
	f.srv = &http.Server{Handler: proxy, Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(lis) }()
	return f, nil
}

// pick is the next target, round robin; nil when there is none (the
// proxy then fails the request with 503).
func (f *gatewayFront) pick() *url.URL {
	ts := *f.targets.Load()
	if len(ts) == 0 {
		return &url.URL{Scheme: "http", Host: "no-live-replica.invalid"}
	}
	return ts[(f.next.Add(1)-1)%uint64(len(ts))]
}

// update replaces the targets with the gateways at addrs.
func (f *gatewayFront) update(addrs []string) {
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

// addr is where clients reach the front.
func (f *gatewayFront) addr() string { return f.lis.Addr().String() }

func (f *gatewayFront) close() error {
	if err := f.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway front: %w", err)
	}
	return nil
}

// entryGateways are the gateways of the live entry replicas.
func (d *Deployment) entryGateways() []string {
	var out []string
	for _, p := range d.live(d.topo.EntryGroup()) {
		if ep, ok := p.listen["gateway"]; ok {
			out = append(out, ep.Addr)
		}
	}
	return out
}

// startGatewayFront puts the front before the gateways when the entry
// group can have more than one replica; GatewayURL is then the front's.
func (d *Deployment) startGatewayFront() error {
	g := d.topo.Groups[d.topo.EntryGroup()]
	if g.Replicas == 1 && g.Autoscale == nil {
		return nil
	}
	dial := (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	if d.net != nil {
		if c := d.net.Capabilities().Client; c != nil {
			dial = c.DialClient // the netns deployer's client, across its link
		}
	}
	f, err := startGatewayFront(d.entryGateways(), dial)
	if err != nil {
		return fmt.Errorf("deployment %s: %w", d.id, err)
	}
	d.front = f
	d.gatewayURL = "http://" + f.addr()
	return nil
}

// pushGateway keeps the front on the live entry replicas.
func (d *Deployment) pushGateway() {
	if d.front != nil {
		d.front.update(d.entryGateways())
	}
}

// stopGatewayFront closes the front and its connections.
func (d *Deployment) stopGatewayFront() error {
	if d.front == nil {
		return nil
	}
	return d.front.close()
}

// gatewayAddr is where the gateway is reached: the front's address with a
// replicated entry, else the one gateway's.
func (d *Deployment) gatewayAddr() string {
	if d.front != nil {
		return d.front.addr()
	}
	return d.gateway.Addr
}
