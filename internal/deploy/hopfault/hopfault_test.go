package hopfault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// hop is a real toxiproxy proxy on loopback in front of a line echo
// server, as the local deployer puts before a targeted group.
func hop(t *testing.T) *toxiproxy.Proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "test", "127.0.0.1:0", lis.Addr().String())
	nop := zerolog.Nop()
	p.Logger = &nop
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// roundTrip sends a line through p on c and waits up to wait for it back.
func roundTrip(c net.Conn, r *bufio.Reader, wait time.Duration) (time.Duration, error) {
	start := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(start.Add(wait))
	_, err := r.ReadString('\n')
	return time.Since(start), err
}

func dial(t *testing.T, p *toxiproxy.Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func TestLinkCutDropsThenCloses(t *testing.T) {
	p := hop(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, time.Second); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	stop, err := Start(runtime.Fault{Kind: spec.FaultLinkCut}, []*toxiproxy.Proxy{p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, r, 300*time.Millisecond); !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err) {
		t.Fatalf("during the cut: %v, want nothing back", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// What was sent during the cut is lost, and the connection that
	// carried it ends with the cut; a new one works.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after the cut: %v, want the old connection closed", err)
	}
	c2, r2 := dial(t, p)
	if _, err := roundTrip(c2, r2, time.Second); err != nil {
		t.Fatalf("a new connection after the cut: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestResetProbability(t *testing.T) {
	for _, tt := range []struct {
		fraction float64
		reset    bool
	}{{1, true}, {1e-9, false}} {
		p := hop(t)
		c, r := dial(t, p)
		stop, err := Start(runtime.Fault{Kind: spec.FaultReset, Fraction: tt.fraction}, []*toxiproxy.Proxy{p})
		if err != nil {
			t.Fatal(err)
		}
		_, err = roundTrip(c, r, time.Second)
		if got := err != nil; got != tt.reset {
			t.Errorf("fraction %g: round trip error %v, want a reset: %v", tt.fraction, err, tt.reset)
		}
		if tt.reset && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
			t.Errorf("fraction 1: %v, want a reset connection", err)
		}
		if err := stop(); err != nil {
			t.Error(err)
		}
	}
}

func TestLatencySpike(t *testing.T) {
	p := hop(t)
	c, r := dial(t, p)
	stop, err := Start(runtime.Fault{Kind: spec.FaultLatencySpike, Delay: 100 * time.Millisecond, Fraction: 1}, []*toxiproxy.Proxy{p})
	if err != nil {
		t.Fatal(err)
	}
	d, err := roundTrip(c, r, 2*time.Second)
	if err != nil || d < 100*time.Millisecond {
		t.Errorf("during the spike: %s, %v; want at least 100ms", d, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if d, err := roundTrip(c, r, 2*time.Second); err != nil || d >= 100*time.Millisecond {
		t.Errorf("after the spike: %s, %v; want the delay gone", d, err)
	}
}

func TestNotAHopFault(t *testing.T) {
	if _, err := Start(runtime.Fault{Kind: spec.FaultKill}, nil); err == nil {
		t.Error("kill accepted as a hop fault")
	}
}
