package front

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// BenchmarkGatewayFront is what the gateway front of a replicated entry
// adds to a request: one client calls one replica's gateway through the
// front (over that one replica) and straight, turn by turn in alternating
// order, one request in flight, so both meet the same machine load. The
// replica is a net/http server answering 100 bytes, as a Go host's gateway
// is net/http: what differs between the two paths is the front alone. Each
// request's latency goes into an HdrHistogram; the metrics are the p50 and
// p99 of each path, their p50 ratio and the p50 the front adds.
// scripts/bench/gatewayfront.sh runs it and takes medians over runs.
func BenchmarkGatewayFront(b *testing.B) {
	answer := bytes.Repeat([]byte("x"), 100)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	replica := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = replica.Serve(lis) }()
	defer replica.Close()
	front, err := StartHTTP([]string{lis.Addr().String()}, (&net.Dialer{Timeout: 5 * time.Second}).DialContext, false)
	if err != nil {
		b.Fatal(err)
	}
	defer front.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	body := bytes.Repeat([]byte("y"), 100)
	via, direct := "http://"+front.Addr()+"/svclab.Echo/Echo", "http://"+lis.Addr().String()+"/svclab.Echo/Echo"
	call := func(u string) error {
		resp, err := client.Post(u, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || n != int64(len(answer)) {
			return errors.New("answer " + resp.Status)
		}
		return nil
	}
	for range 200 { // warm both paths' connections
		if err := errors.Join(call(via), call(direct)); err != nil {
			b.Fatal(err)
		}
	}
	fh := hdrhistogram.New(1, int64(10*time.Second), 3)
	dh := hdrhistogram.New(1, int64(10*time.Second), 3)
	timed := func(u string, h *hdrhistogram.Histogram) {
		t0 := time.Now()
		if err := call(u); err != nil {
			b.Fatal(err)
		}
		_ = h.RecordValue(int64(time.Since(t0)))
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			timed(via, fh)
			timed(direct, dh)
		} else {
			timed(direct, dh)
			timed(via, fh)
		}
	}
	b.StopTimer()
	us := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e3 }
	b.ReportMetric(us(fh, 50), "front-p50-us")
	b.ReportMetric(us(dh, 50), "direct-p50-us")
	b.ReportMetric(us(fh, 99), "front-p99-us")
	b.ReportMetric(us(dh, 99), "direct-p99-us")
	b.ReportMetric(us(fh, 50)/us(dh, 50), "p50-ratio")
	b.ReportMetric(us(fh, 50)-us(dh, 50), "added-p50-us")
}
