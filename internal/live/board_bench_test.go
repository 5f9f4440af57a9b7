package live

import (
	"math/rand/v2"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// BenchmarkSecond is what the live view costs the generator's process
// each second at 5,000 req/s: the copy of the second's histogram that
// load.Progress carries, and the board's merge, percentiles and event.
// docs/PERFORMANCE.md ("The live view's cost") divides it by a second's
// requests.
func BenchmarkSecond(b *testing.B) {
	src := newHist()
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		_ = src.RecordValue(200 + int64(r.ExpFloat64()*300))
	}
	board := NewBoard()
	board.RunStarted(Run{ID: "r"})
	b.ResetTimer()
	for i := range b.N {
		if i%maxSeconds == maxSeconds-1 {
			board.RunStarted(Run{ID: "r"}) // as a new run would: the log stays bounded
		}
		h := hdr.Import(src.Export())
		board.Second(Second{Elapsed: time.Duration(i+1) * time.Second, Requests: 5000, RPS: 5000, Latency: h,
			ErrorClasses: map[string]int64{"timeout": int64(i)}})
	}
}
