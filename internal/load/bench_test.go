package load

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// BenchmarkRecord is the cost of recording one finished request: the
// generator's per-request bookkeeping.
func BenchmarkRecord(b *testing.B) {
	r := newRecorder([]string{"total", "op"}, []string{"total", "request"}, 0)
	b.RunParallel(func(pb *testing.PB) {
		i := int64(0)
		for pb.Next() {
			i++
			r.record(1, i, i, i+1000, i+(i%5000)*1000, "ok")
		}
	})
}

// BenchmarkNextArrival is the cost of planning one open-loop arrival.
func BenchmarkNextArrival(b *testing.B) {
	cfg := Config{Rate: 1000, Stages: []Stage{{Type: "ramp", Duration: Duration(time.Hour), Rate: 5000}}}
	segs := profile(&cfg, cfg.Rate, func(s Stage) float64 { return s.Rate })
	area := 0.0
	for b.Loop() {
		area++
		nextArrival(segs, 0, area)
	}
}

// BenchmarkClosedLoop is the generator's overhead per iteration in a
// closed loop around a no-op target: scheduling, timing, recording.
func BenchmarkClosedLoop(b *testing.B) {
	tg := &Target{Ops: []Op{{Name: "noop", Weight: 1, Do: func(context.Context, *Session) error { return nil }}}}
	b.ResetTimer()
	res, err := Run(context.Background(), Config{Mode: "closed", Users: 4, Requests: int64(b.N), Duration: Duration(time.Hour)}, tg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	res.Close()
}

// BenchmarkOpenLoop is the same with open-loop dispatch (a goroutine per
// arrival) at a rate far above what the loop can send, so it measures
// the dispatch path itself.
func BenchmarkOpenLoop(b *testing.B) {
	tg := &Target{Ops: []Op{{Name: "noop", Weight: 1, Do: func(context.Context, *Session) error { return nil }}}}
	b.ReportAllocs()
	b.ResetTimer()
	// Past MaxRate, which Run refuses, so the runner is driven directly.
	res, err := runUnchecked(b, Config{Rate: 1e7, Requests: int64(b.N), Duration: Duration(time.Hour)}, tg)
	if err != nil {
		b.Fatal(err)
	}
	res.Close()
}

// rawServer answers every HTTP/1.1 request on a connection with a fixed
// response, parsing nothing but the blank line: as cheap a server as can
// be, so the benchmarks below measure the client.
func rawServer(b *testing.B) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lis.Close() })
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return lis.Addr().String()
}

// BenchmarkHTTP1 compares svclab's HTTP/1.1 client with net/http's on one
// keep-alive connection, per request.
func BenchmarkHTTP1(b *testing.B) {
	addr := rawServer(b)
	b.Run("svclab", func(b *testing.B) {
		cfg := Config{Target: "http://" + addr, Rate: 1}
		tg, err := NewTarget(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer tg.Close()
		s := &Session{Timeout: time.Second}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := tg.Ops[0].Do(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("net-http", func(b *testing.B) {
		cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := cl.Get("http://" + addr + "/")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// TestOpenLoopSendAllocatesNothing: the open loop's steady state costs no
// allocation per send. Two runs of one second differ only in their rate;
// what the extra sends allocate, per send, must be nil (the per-second
// HDR logging and the run's setup are the same in both).
func TestOpenLoopSendAllocatesNothing(t *testing.T) {
	tg := &Target{Ops: []Op{{Name: "noop", Weight: 1, Do: func(context.Context, *Session) error { return nil }}}}
	mallocs := func(rate float64) (uint64, int64) {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		res, err := Run(context.Background(), Config{Rate: rate, Duration: Duration(time.Second)}, tg, Options{})
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		return m1.Mallocs - m0.Mallocs, res.Generator.Sends
	}
	mallocs(1000) // warm the pools and the runtime
	lo, nlo := mallocs(1000)
	hi, nhi := mallocs(10000)
	if nhi-nlo < 5000 {
		t.Skipf("only %d and %d sends: the host is too busy to compare", nlo, nhi)
	}
	per := (float64(hi) - float64(lo)) / float64(nhi-nlo)
	t.Logf("%d sends: %d mallocs; %d sends: %d mallocs; %.4f per extra send", nlo, lo, nhi, hi, per)
	if per > 0.05 {
		t.Errorf("%.3f allocations per open-loop send, want 0", per)
	}
}
