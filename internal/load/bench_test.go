package load

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
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
	segs := profile(&cfg, cfg.Rate, 0, func(s Stage) float64 { return s.Rate })
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
// allocation per send. With every allocation profiled, the objects
// allocated on the send path (the pacing loop and its workers, down to
// the recorder) during a run of 10,000 sends must be a handful (growing
// the worker pool in a burst), not one or more per send. The per-second
// HDR logging allocates in proportion to the histogram's buckets, not to
// the sends, and runs on another goroutine, so it is not counted.
func TestOpenLoopSendAllocatesNothing(t *testing.T) {
	tg := &Target{Ops: []Op{{Name: "noop", Weight: 1, Do: func(context.Context, *Session) error { return nil }}}}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	before := sendPathAllocs(t)
	res, err := Run(context.Background(), Config{Rate: 10000, Duration: Duration(time.Second)}, tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	n := sendPathAllocs(t) - before
	sends := res.Generator.Sends
	t.Logf("%d sends, %d objects allocated on the send path", sends, n)
	if sends < 1000 {
		t.Skipf("only %d sends: the host was too busy", sends)
	}
	if float64(n) > 0.01*float64(sends) {
		t.Errorf("%d objects allocated on the send path for %d sends, want none per send", n, sends)
	}
}

// sendPathAllocs counts the objects allocated so far whose stack passes
// through the open loop or its workers.
func sendPathAllocs(t *testing.T) int64 {
	t.Helper()
	// The profile is as of the last completed GC, which the second one
	// guarantees covers everything allocated before the first.
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	var total int64
	for _, r := range recs {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasSuffix(f.Function, "load.(*runner).openLoop") || strings.HasSuffix(f.Function, "load.(*runner).worker") {
				total += r.AllocObjects
				break
			}
			if !more {
				break
			}
		}
	}
	return total
}
