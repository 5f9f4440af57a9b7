package cgroup

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCPUQuota measures the CPU a child spinning on every core uses
// under each quota, over 2 s windows of the group's own CPU accounting:
// the "cores" metric should equal the quota. The group and its parents
// get the largest CPU weight (boost), so that other work on the machine is
// not what holds the child back.
func BenchmarkCPUQuota(b *testing.B) {
	m, err := Open()
	if err != nil {
		b.Skipf("needs writable cgroups: %v", err)
	}
	defer m.Close()
	for _, q := range []float64{0.25, 0.5, 1} {
		b.Run(fmt.Sprintf("quota=%g", q), func(b *testing.B) {
			g, err := m.New(fmt.Sprintf("bench-%g", q), Limits{CPU: q})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Remove()
			boost(b, m, g)
			child(b, "spin", g)
			time.Sleep(300 * time.Millisecond)
			b.ResetTimer()
			var cores, throttled float64
			for range b.N {
				s0, err := g.Stats()
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				time.Sleep(2 * time.Second)
				s1, err := g.Stats()
				if err != nil {
					b.Fatal(err)
				}
				cores += (s1.CPUSeconds - s0.CPUSeconds) / time.Since(t0).Seconds()
				if p := s1.Periods - s0.Periods; p > 0 {
					throttled += float64(s1.ThrottledPeriods-s0.ThrottledPeriods) / float64(p)
				}
			}
			b.ReportMetric(cores/float64(b.N), "cores")
			b.ReportMetric(100*throttled/float64(b.N), "%throttled")
		})
	}
}
