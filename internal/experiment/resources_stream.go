package experiment

import (
	"context"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// Stream makes the sampler also record, from Start until its context is
// done, the samples dep reports when it is a ResourceStreamer. A process
// it reports joins the run's processes (Joined) with its first sample.
// Call it before Start.
func (rs *ResourceSampler) Stream(dep deploy.Deployment) {
	rs.stream = dep.Capabilities().Resources
}

// addStreamed records one reported sample.
func (rs *ResourceSampler) addStreamed(ctx context.Context, p deploy.ProcessInfo, at time.Time, u deploy.Usage) {
	if ctx.Err() != nil {
		return // the sampler has stopped: the rows may be written already
	}
	row := rowOf(p, u)
	if rs.publish != nil {
		rs.publish(p, at, u)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.streamed[p.Name] {
		if rs.streamed == nil {
			rs.streamed = map[string]bool{}
		}
		rs.streamed[p.Name] = true
		rs.joined = append(rs.joined, p)
	}
	row.TS = at.Sub(rs.zero).Seconds()
	rs.rows = append(rs.rows, row)
}
