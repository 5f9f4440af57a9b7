package balancer_test

import (
	"context"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/proto/echo"
)

// BenchmarkOverOne measures what the balancer adds to a call: the same
// server is called through a balancer over its one endpoint and through a
// bare transport connection, turn by turn in alternating order, so both
// meet the same machine load at the same rate (one call in flight). Each
// call's latency goes into an HdrHistogram; the ratio of the medians is
// the cost (docs/PERFORMANCE.md, "Load balancing").
func BenchmarkOverOne(b *testing.B) {
	for _, tr := range networkTransports(b) {
		b.Run(tr.Name(), func(b *testing.B) {
			s := startServer(b, tr)
			ctx := context.Background()
			bare, err := tr.Dial(ctx, "tcp", s.addr, transport.DialOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer bare.Close()
			bal := balancer.New("echo", balancer.Options{})
			defer bal.Close()
			if err := bal.Update(addresses(s)); err != nil {
				b.Fatal(err)
			}
			req := &echo.EchoRequest{Payload: make([]byte, 100)}
			bc, dc := echo.NewEchoClient(bal), echo.NewEchoClient(bare)
			call := func(c echo.EchoClient) {
				if _, err := c.Echo(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			for range 100 {
				call(bc)
				call(dc)
			}
			bh := hdrhistogram.New(1, int64(10*time.Second), 3)
			dh := hdrhistogram.New(1, int64(10*time.Second), 3)
			timed := func(c echo.EchoClient, h *hdrhistogram.Histogram) {
				t0 := time.Now()
				call(c)
				_ = h.RecordValue(int64(time.Since(t0)))
			}
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 {
					timed(bc, bh)
					timed(dc, dh)
				} else {
					timed(dc, dh)
					timed(bc, bh)
				}
			}
			b.StopTimer()
			b50, d50 := float64(bh.ValueAtQuantile(50))/1e3, float64(dh.ValueAtQuantile(50))/1e3
			b.ReportMetric(b50, "p50-us")
			b.ReportMetric(d50, "bare-p50-us")
			b.ReportMetric(b50/d50, "p50-ratio")
		})
	}
}
