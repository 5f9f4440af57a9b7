package procstat_test

import (
	"context"
	"testing"

	"github.com/svclab/svclab/internal/deploy/procstat"
)

// BenchmarkSampleSelf is one sample of the calling process: its stat and
// its smaps_rollup, whose page-table walk is most of the cost
// (docs/PERFORMANCE.md, "Synth topologies at scale").
func BenchmarkSampleSelf(b *testing.B) {
	src, err := procstat.Self()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := src.Sample(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
