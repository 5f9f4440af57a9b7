package load

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"
)

// busyUntil waits until t: it sleeps while far away and spins the last
// 2 ms, because time.Sleep overshoots by up to a millisecond (the runtime
// parks idle threads in epoll_wait, whose timeout is in ms), and the
// accuracy tests need the server's service time to be what they say.
func busyUntil(t time.Time) {
	if d := time.Until(t) - 2*time.Millisecond; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
	}
}

// fixedServer answers every request after exactly d.
func fixedServer(t *testing.T, d time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		busyUntil(time.Now().Add(d))
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// freezeServer answers in 1 ms, except that it stops answering for
// `freeze` once a second (from 0.5 s past each second of its start), as a
// server does during a stop-the-world pause.
func freezeServer(t *testing.T, freeze time.Duration) *httptest.Server {
	t.Helper()
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		el := time.Since(start)
		into := el % time.Second
		if into >= 500*time.Millisecond && into < 500*time.Millisecond+freeze {
			time.Sleep(500*time.Millisecond + freeze - into)
		}
		busyUntil(time.Now().Add(time.Millisecond))
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// run runs cfg against its own target and fails the test on error.
func run(t *testing.T, cfg Config, opt Options) *Result {
	t.Helper()
	tg, err := NewTarget(cfg)
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	defer tg.Close()
	res, err := Run(context.Background(), cfg, tg, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { res.Close() })
	return res
}

func mustOp(t *testing.T, r *Result, name string) Operation {
	t.Helper()
	o, ok := r.Op(name)
	if !ok {
		t.Fatalf("no operation %q in %+v", name, r.Summary.Operations)
	}
	return o
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// rtts measures n round trips of a GET to srvURL with a plain blocking
// client on one keep-alive connection, in ms.
// rtts times n requests from a plain blocking client, idle for gap between
// them, as the generator's arrivals are: a machine woken from idle answers
// slower than a busy one, so the reference must idle alike.
func rtts(t *testing.T, srvURL string, n int, gap time.Duration) []float64 {
	t.Helper()
	u, _ := url.Parse(srvURL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := []byte("GET / HTTP/1.1\r\nHost: " + u.Host + "\r\n\r\n")
	var rtts []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rtts = append(rtts, float64(time.Since(start))/1e6)
		time.Sleep(gap)
	}
	return rtts
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}
