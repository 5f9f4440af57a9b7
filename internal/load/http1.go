package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// h1Client is a minimal HTTP/1.1 keep-alive client. It exists because
// net/http's Transport spends more CPU per request than a small server
// does to answer it (a read and a write goroutine per connection,
// channels between them, a header map per response), so a generator built
// on it saturates before the target it measures. This client writes a
// pre-rendered request and parses the answer in place on the caller's
// goroutine: one write, usually one read, no allocation.
type h1Client struct {
	network string // "tcp", or "unix" for a socket's path in addr
	addr    string
	timeout time.Duration
	sem     chan struct{} // nil: as many connections as concurrent requests

	mu     sync.Mutex
	idle   []*h1Conn
	all    map[*h1Conn]struct{}
	closed bool
}

type h1Conn struct {
	nc net.Conn
	br *bufio.Reader
}

func newH1Client(network, addr string, conns int, timeout time.Duration) *h1Client {
	c := &h1Client{network: network, addr: addr, timeout: timeout, all: map[*h1Conn]struct{}{}}
	if conns > 0 {
		c.sem = make(chan struct{}, conns)
	}
	return c
}

var errClientClosed = errors.New("client closed")

// acquire waits for a connection slot and returns an idle connection, or
// nil when a new one must be dialled.
func (c *h1Client) acquire(ctx context.Context) (*h1Conn, error) {
	if c.sem != nil {
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.releaseLocked()
		return nil, errClientClosed
	}
	if n := len(c.idle); n > 0 {
		cn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		return cn, nil
	}
	return nil, nil
}

func (c *h1Client) releaseLocked() {
	if c.sem != nil {
		<-c.sem
	}
}

func (c *h1Client) dial(ctx context.Context) (*h1Conn, error) {
	d := net.Dialer{Timeout: c.timeout}
	nc, err := d.DialContext(ctx, c.network, c.addr)
	if err != nil {
		return nil, err
	}
	cn := &h1Conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.all[cn] = struct{}{}
	}
	c.mu.Unlock()
	if closed {
		nc.Close()
		return nil, errClientClosed
	}
	return cn, nil
}

// release gives the slot back, keeping cn for reuse when it is still good.
func (c *h1Client) release(cn *h1Conn, reuse bool) {
	c.mu.Lock()
	if cn != nil {
		if reuse && !c.closed {
			c.idle = append(c.idle, cn)
		} else {
			delete(c.all, cn)
			cn.nc.Close()
		}
	}
	c.releaseLocked()
	c.mu.Unlock()
}

// Close closes every connection, which also ends requests in flight.
func (c *h1Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for cn := range c.all {
		cn.nc.Close()
	}
	c.all = map[*h1Conn]struct{}{}
	c.idle = nil
	return nil
}

// h1Response is what roundTrip learned from an answer.
type h1Response struct {
	status int
	reuse  bool
	// got is set once any byte of the answer has arrived; a reused
	// connection that fails before that was most likely closed by the
	// server while idle, and the request never reached it.
	got bool
}

// roundTrip writes req and reads one response. The session keeps the
// cookies the response sets, as a browser would, and ex (when not nil)
// gets the headers and body it extracts from.
func (cn *h1Conn) roundTrip(req []byte, head bool, s *Session, ex *extractor, deadline time.Time) (h1Response, error) {
	var r h1Response
	if err := cn.nc.SetDeadline(deadline); err != nil {
		return r, err
	}
	if _, err := cn.nc.Write(req); err != nil {
		return r, err
	}
	br := cn.br
	length, chunked := int64(-1), false
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			r.got = true
		}
		if err != nil {
			return r, err
		}
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return r, fmt.Errorf("malformed HTTP status line %q", trimCRLF(line))
		}
		r.reuse = line[7] == '1'
		r.status = atoi3(line[9:12])
		if r.status < 0 {
			return r, fmt.Errorf("malformed HTTP status line %q", trimCRLF(line))
		}
		for {
			line, err = readLine(br)
			if err != nil {
				return r, err
			}
			line = trimCRLF(line)
			if len(line) == 0 {
				break
			}
			i := bytes.IndexByte(line, ':')
			if i <= 0 {
				return r, fmt.Errorf("malformed HTTP header line %q", line)
			}
			name, value := line[:i], bytes.TrimSpace(line[i+1:])
			switch len(name) {
			case 14:
				if asciiEqualFold(name, "content-length") {
					n, err := strconv.ParseInt(string(value), 10, 64)
					if err != nil || n < 0 {
						return r, fmt.Errorf("bad Content-Length %q", value)
					}
					length = n
				}
			case 17:
				if asciiEqualFold(name, "transfer-encoding") && !asciiEqualFold(value, "identity") {
					chunked = true
				}
			case 10:
				if asciiEqualFold(name, "connection") {
					if asciiEqualFold(value, "close") {
						r.reuse = false
					} else if asciiEqualFold(value, "keep-alive") {
						r.reuse = true
					}
				}
			}
			sessionHeader(s, ex, name, value)
		}
		// 1xx answers are interim: the real one follows.
		if r.status >= 100 && r.status < 200 && r.status != 101 {
			length, chunked = -1, false
			continue
		}
		break
	}
	var body *[]byte
	if ex != nil && ex.json {
		body = &s.body
		*body = (*body)[:0]
	}
	switch {
	case head || r.status == 204 || r.status == 304:
	case chunked:
		if err := readChunked(br, body); err != nil {
			return r, err
		}
	case length >= 0:
		if err := readN(br, length, body); err != nil {
			return r, err
		}
	default:
		// No length: the body runs to the end of the connection.
		r.reuse = false
		if body != nil {
			b, err := io.ReadAll(br)
			*body = append(*body, b...)
			if err != nil {
				return r, err
			}
		} else if _, err := io.Copy(io.Discard, br); err != nil {
			return r, err
		}
	}
	return r, nil
}

func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errors.New("HTTP header line longer than 16 KiB")
	}
	if err == io.EOF && len(line) == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return line, err
}

func readN(br *bufio.Reader, n int64, body *[]byte) error {
	if body == nil {
		for n > 0 {
			k := int(min(n, 1<<30))
			d, err := br.Discard(k)
			n -= int64(d)
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		return nil
	}
	start := len(*body)
	*body = append(*body, make([]byte, n)...)
	_, err := io.ReadFull(br, (*body)[start:])
	return err
}

func readChunked(br *bufio.Reader, body *[]byte) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		line = trimCRLF(line)
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			for { // trailers end with an empty line
				line, err := readLine(br)
				if err != nil {
					return err
				}
				if len(trimCRLF(line)) == 0 {
					return nil
				}
			}
		}
		if err := readN(br, size, body); err != nil {
			return err
		}
		if err := readN(br, 2, nil); err != nil {
			return err
		}
	}
}

func trimCRLF(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func atoi3(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// asciiEqualFold compares b with lower, which must be lower case.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// op sends h over c; the request is pre-rendered when nothing in it varies.
func (c *h1Client) op(h *httpReq) func(ctx context.Context, s *Session) error {
	return func(ctx context.Context, s *Session) error {
		req := h.static
		if req == nil || len(s.cookies) > 0 {
			s.scratch = h.appendH1(s.scratch[:0], s)
			req = s.scratch
		}
		h.ex.forget(s)
		cn, err := c.acquire(ctx)
		if err != nil {
			return err
		}
		s.MarkSent()
		reused := cn != nil
		if cn == nil {
			if cn, err = c.dial(ctx); err != nil {
				c.release(nil, false)
				return err
			}
		}
		deadline := s.sent.Add(s.Timeout)
		resp, err := cn.roundTrip(req, h.head, s, h.ex, deadline)
		if err != nil && reused && !resp.got && time.Now().Before(deadline) {
			// The server closed the idle connection (a keep-alive timeout)
			// before our request reached it: retry once on a new one, as
			// net/http does, rather than report an error the service never
			// saw. The wait stays in the service time.
			cn.nc.Close()
			if cn, err = c.dial(ctx); err != nil {
				c.release(nil, false)
				return err
			}
			resp, err = cn.roundTrip(req, h.head, s, h.ex, deadline)
		}
		c.release(cn, err == nil && resp.reuse)
		if err != nil {
			return err
		}
		return h.answer(s, resp.status)
	}
}
