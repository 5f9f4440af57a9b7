package load

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// h2cClient sends h2c requests through net/http, which multiplexes them
// over Connections HTTP/2 connections (one when 0).
type h2cClient struct {
	clients []*http.Client
	next    atomic.Uint64
}

func newH2CClient(network, addr string, conns int, timeout time.Duration) *h2cClient {
	if conns <= 0 {
		conns = 1
	}
	c := &h2cClient{}
	for range conns {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr := &http.Transport{Protocols: &p, MaxIdleConnsPerHost: 1, ResponseHeaderTimeout: timeout}
		if network == "unix" {
			// Every request names localhost; the socket is where it goes.
			tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
		}
		c.clients = append(c.clients, &http.Client{Transport: tr, Timeout: timeout})
	}
	return c
}

func (c *h2cClient) Close() error {
	for _, cl := range c.clients {
		cl.CloseIdleConnections()
	}
	return nil
}

func (c *h2cClient) op(h *httpReq, base string) func(ctx context.Context, s *Session) error {
	return func(ctx context.Context, s *Session) error {
		var body io.Reader
		if h.hasBody {
			body = bytes.NewReader(h.body.appendTo(nil, s))
		}
		req, err := http.NewRequestWithContext(ctx, h.method, base+h.path.render(s), body)
		if err != nil {
			return classed("request", err)
		}
		req.Host = h.host
		req.Header.Set("User-Agent", "svclab-load")
		for _, x := range h.hdrs {
			req.Header.Set(x.name, x.val.render(s))
		}
		for _, ck := range s.cookies {
			req.AddCookie(&http.Cookie{Name: ck.name, Value: ck.value})
		}
		cl := c.clients[c.next.Add(1)%uint64(len(c.clients))]
		s.MarkSent()
		resp, err := cl.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		h.ex.forget(s)
		for k, vs := range resp.Header {
			for _, v := range vs {
				sessionHeader(s, h.ex, []byte(k), []byte(v))
			}
		}
		if h.ex != nil && h.ex.json {
			s.body, err = io.ReadAll(resp.Body)
		} else {
			_, err = io.Copy(io.Discard, resp.Body)
		}
		if err != nil {
			return err
		}
		return h.answer(s, resp.StatusCode)
	}
}
