package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/svclab/svclab/apps/rpcops"
	opspb "github.com/svclab/svclab/proto/rpcops"
)

// BenchmarkRoundTrip times one rpcops Long call, sequential, from a Go
// client to the ops component of each implementation over each transport:
// the per-call cost of a language's host on the same wire. p50-µs is the
// median of the timed calls. The host is warmed up (JIT) first; the JVM
// runs with its default flags.
//
//	go test -run '^$' -bench RoundTrip ./internal/conformance
func BenchmarkRoundTrip(b *testing.B) {
	for _, im := range impls {
		b.Run(im.lang, func(b *testing.B) {
			// The JVM with its full JIT, not the tests' quick-start flags.
			argv := slices.DeleteFunc(im.argv(b), func(a string) bool {
				return a == "-XX:TieredStopAtLevel=1" || a == "-XX:+UseSerialGC" || a == "-Xmx256m"
			})
			for _, tr := range transports {
				// Started once for all of the sub-benchmark's rounds.
				p := startHost(b, im, argv, hostConfig(rpcops.Name, rpcops.OpsComp, tr, nil))
				conn := dial(b, tr, p.addrs[rpcops.OpsComp])
				b.Run(tr, func(b *testing.B) {
					req, resp := &opspb.LongRequest{Value: 1}, new(opspb.LongResponse)
					ctx := context.Background()
					call := func() {
						if err := conn.Invoke(ctx, opspb.Ops_Long_FullMethodName, req, resp); err != nil {
							b.Fatal(err)
						}
					}
					if b.N > 1 {
						for range 5000 {
							call()
						}
					}
					lat := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for range b.N {
						start := time.Now()
						call()
						lat = append(lat, time.Since(start))
					}
					b.StopTimer()
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
				})
			}
		})
	}
}
