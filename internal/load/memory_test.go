package load

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestMemoryBounded sends 1,000,000 requests to an in-process target with
// raw samples off and checks that the heap never passes 100 MB: the
// generator keeps histograms and per-second rows, not samples.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a million requests")
	}
	var calls atomic.Int64
	tg := &Target{Ops: []Op{{Name: "noop", Weight: 1, Do: func(context.Context, *Session) error {
		calls.Add(1)
		return nil
	}}}}
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const n = 1_000_000
	cfg := Config{Mode: "closed", Users: 8, Requests: n, Duration: Duration(2 * time.Minute)}
	start := time.Now()
	res, err := Run(context.Background(), cfg, tg, Options{})
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	tot := mustOp(t, res, "total")
	t.Logf("%d requests in %v, peak heap %.1f MB", tot.Count, time.Since(start).Round(time.Millisecond), float64(peak.Load())/1e6)
	if tot.Count != n || calls.Load() != n {
		t.Fatalf("recorded %d requests, made %d calls, want %d", tot.Count, calls.Load(), n)
	}
	if p := peak.Load(); p > 100<<20 {
		t.Fatalf("peak heap %.1f MB, want < 100 MB", float64(p)/(1<<20))
	}
}
