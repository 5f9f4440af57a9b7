package load

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// TestAccuracy: against a server with a known service time, at a rate far
// below its capacity, the reported p50 is that service time within 5% +
// 100 µs, both from the intended and from the actual send. The "known"
// time is the server's fixed wait plus what an HTTP exchange costs on this
// machine (0.1-0.3 ms on a shared virtual machine, more than the tolerance
// itself, and drifting with the load of whatever else runs), so it is
// measured with an independent blocking client on the same server, in
// turns with the generator: three rounds of reference then generator, each
// side's samples pooled, so both meet the same machine.
func TestAccuracy(t *testing.T) {
	for _, tc := range []struct {
		service time.Duration
		rate    float64
	}{{time.Millisecond, 100}, {20 * time.Millisecond, 40}} {
		t.Run(tc.service.String(), func(t *testing.T) {
			srv := fixedServer(t, tc.service)
			var ref, lat, svc []float64
			var lagP50 float64
			for round := range 3 {
				period := time.Duration(float64(time.Second) / tc.rate)
				ref = append(ref, rtts(t, srv.URL, int(400*time.Millisecond/period), period-tc.service)...)
				dir := t.TempDir()
				res := run(t, Config{Target: srv.URL, Rate: tc.rate, Duration: Duration(time.Second), Seed: int64(round + 1), RawSamples: true}, Options{Dir: dir})
				tot := mustOp(t, res, "total")
				if want := int64(tc.rate); tot.Count < want*9/10 || tot.Errors != 0 {
					t.Fatalf("count %d errors %d, want about %d and none", tot.Count, tot.Errors, want)
				}
				if math.Abs(tot.RPS-tc.rate) > tc.rate*0.05 {
					t.Errorf("rps = %.1f, want %.0f", tot.RPS, tc.rate)
				}
				rows, err := parquet.ReadFile[sampleRow](filepath.Join(dir, "samples.parquet"))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					lat = append(lat, r.LatencyUs/1e3)
					svc = append(svc, r.ServiceTimeUs/1e3)
				}
				lagP50 = max(lagP50, res.Generator.LagP50Ms)
			}
			want := median(ref)
			t.Logf("reference p50 %.3f ms; generator latency p50 %.3f ms, service time p50 %.3f ms; send lag p50 <= %.3f ms",
				want, median(lat), median(svc), lagP50)
			if d := want - float64(tc.service)/1e6; d < 0 || d > 2 {
				t.Fatalf("reference client measured %.3f ms for a %v server: the machine is too busy to test accuracy", want, tc.service)
			}
			tol := 0.05*float64(tc.service)/1e6 + 0.1
			for what, got := range map[string]float64{"latency": median(lat), "service time": median(svc)} {
				if math.Abs(got-want) > tol {
					t.Errorf("%s p50 = %.3f ms, want %.3f ± %.3f ms", what, got, want, tol)
				}
			}
		})
	}
}

// TestCoordinatedOmission: a server that freezes 300 ms once a second.
// The open loop charges the freeze to every request that waited behind
// it; the service time, measured from the actual send, does not see it; a
// closed loop hides it from its latency but shows it in the pacing lag.
func TestCoordinatedOmission(t *testing.T) {
	srv := freezeServer(t, 300*time.Millisecond)
	open := run(t, Config{Target: srv.URL, Rate: 200, Connections: 1, Duration: Duration(3 * time.Second)}, Options{})
	ot := mustOp(t, open, "total")
	t.Logf("open: latency p50 %.2f p99 %.2f ms; service time p50 %.2f p99 %.2f ms", ot.Latency.P50Ms, ot.Latency.P99Ms, ot.ServiceTime.P50Ms, ot.ServiceTime.P99Ms)
	if ot.Latency.P99Ms < 150 {
		t.Errorf("open-loop latency p99 = %.1f ms, want >= 150 (the freeze)", ot.Latency.P99Ms)
	}
	if ot.ServiceTime.P99Ms > 50 {
		t.Errorf("open-loop service time p99 = %.1f ms, want it free of the freeze (< 50)", ot.ServiceTime.P99Ms)
	}

	closed := run(t, Config{Target: srv.URL, Mode: "closed", Users: 1, Duration: Duration(3 * time.Second)}, Options{})
	ct := mustOp(t, closed, "total")
	g := closed.Generator
	t.Logf("closed: latency p50 %.2f p99 %.2f ms; lag p99 %.2f max %.2f ms, late %d", ct.Latency.P50Ms, ct.Latency.P99Ms, g.LagP99Ms, g.LagMaxMs, g.LateSends)
	if ct.Latency.P99Ms > 150 {
		t.Errorf("closed-loop latency p99 = %.1f ms; expected it to hide the freeze", ct.Latency.P99Ms)
	}
	// The pacing lag shows the freezes; they are the server's, so no send
	// counts as late: without think time nothing schedules a send.
	if g.LagMaxMs < 150 || g.LateSends != 0 {
		t.Errorf("closed-loop lag max %.1f ms, late sends %d: want the freezes (>= 150 ms) and no late send", g.LagMaxMs, g.LateSends)
	}
	if g.Bottleneck {
		t.Errorf("closed-loop lag caused by the server flagged the generator: %s", g.Reason)
	}
}

func ExampleProgress_String() {
	fmt.Println(Progress{Elapsed: 3 * time.Second, RPS: 99.5, P50: time.Millisecond, P99: 2500 * time.Microsecond})
	// Output:    3.0s      99.5 rps  0 errors  p50 1.00ms  p99 2.50ms  late 0  dropped 0
}
