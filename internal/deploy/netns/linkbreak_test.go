package netns

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/svclab/svclab/internal/spec"
)

// TestLinkOneWay splits a link's round trip into its two directions, by an
// echo server in this process that notes when each message reached it:
// each direction must add half the link's latency, ± 0.25 ms at p50, over
// the same direction without a link. It logs the proxy's own estimates
// (how late its reads return after arrival, how late its sleeps end), so
// that a miss says where the time went: before the proxy read the segment
// (taken off by the arrival stamp), in the toxic's sleep, or after the
// proxy wrote it (the receiver's wake-up, which a real link has too).
func TestLinkOneWay(t *testing.T) {
	needRoot(t)
	NeedAccuracyRun(t)
	n, err := buildNetwork([]string{"vm1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.close(); err != nil {
			t.Error(err)
		}
	})
	l, err := listenIn(n.machines[0].ns, n.machines[0].ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	arrived := make(chan time.Time, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					arrived <- time.Now()
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	oneWay := func(addr string) (up, down time.Duration) {
		c, err := dialIn(context.Background(), n.client.ns, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hu := hdrhistogram.New(1, int64(10*time.Second), 3)
		hd := hdrhistogram.New(1, int64(10*time.Second), 3)
		buf := make([]byte, 64)
		for i := -10; i < 150; i++ {
			t0 := time.Now()
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
			t2 := time.Now()
			t1 := <-arrived
			if i >= 0 {
				_ = hu.RecordValue(int64(t1.Sub(t0)))
				_ = hd.RecordValue(int64(t2.Sub(t1)))
			}
		}
		return p50(hu), p50(hd)
	}
	via := func(link Link) (string, *proxy) {
		lis, err := listenIn(n.router, routerIP+":0")
		if err != nil {
			t.Fatal(err)
		}
		up := l.Addr().String()
		p := newProxy("oneway", lis, up, func(ctx context.Context) (net.Conn, error) { return dialIn(ctx, n.router, "tcp", up) })
		if err := addLinkToxics(p.tp, link); err != nil {
			t.Fatal(err)
		}
		p.serve()
		t.Cleanup(func() { _ = p.close() })
		return p.addr(), p
	}
	du, dd := oneWay(l.Addr().String())
	t.Logf("direct: up %s, down %s", du, dd)
	for _, lat := range []time.Duration{2 * time.Millisecond, 10 * time.Millisecond} {
		addr, p := via(Link{Latency: spec.Duration(lat)})
		u, d := oneWay(addr)
		t.Logf("link %s: up adds %s, down adds %s (learnt means: reads return %s after arrival; sleeps end %s late up, %s down)",
			lat, u-du, d-dd, arrivalLate(), sleepLate(t, p, "upstream"), sleepLate(t, p, "downstream"))
		for dir, got := range map[string]time.Duration{"up": u - du, "down": d - dd} {
			if e := got - lat/2; e < -250*time.Microsecond || e > 250*time.Microsecond {
				t.Errorf("link %s, %s: adds %s, want %s ± 0.25ms", lat, dir, got, lat/2)
			}
		}
	}
}

// sleepLate is the lateness a proxy's link toxic has learnt in one direction.
func sleepLate(t *testing.T, p *proxy, dir string) time.Duration {
	t.Helper()
	w := p.tp.Toxics.GetToxic("link_" + dir)
	if w == nil {
		t.Fatalf("no link toxic %s", dir)
	}
	lt, ok := w.Toxic.(*linkToxic)
	if !ok {
		t.Fatalf("toxic %s is %T", dir, w.Toxic)
	}
	return time.Duration(lt.late.Load())
}
