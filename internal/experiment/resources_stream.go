package experiment

import (
	"context"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// ResourceStreamer is a deployment whose processes are not this machine's
// (a cluster's pods): their usage comes from a service that has a sample
// at its own times, not whenever the sampler ticks, and they come and go
// without the runner's doing (an HPA). Such a deployment reports its
// samples itself, and the sampler records them beside its own.
type ResourceStreamer interface {
	// StreamResources calls emit with each new sample of each process,
	// at the time the usage was measured, until ctx is done. It returns
	// at once when it has nothing to sample; the deployment says why in
	// its warnings.
	StreamResources(ctx context.Context, emit func(p deploy.ProcessInfo, at time.Time, u deploy.Usage))
}

// Stream makes the sampler also record, from Start until its context is
// done, the samples dep reports when it is a ResourceStreamer. A process
// it reports joins the run's processes (Joined) with its first sample.
// Call it before Start.
func (rs *ResourceSampler) Stream(dep deploy.Deployment) {
	if s, ok := dep.(ResourceStreamer); ok {
		rs.stream = s
	}
}

// addStreamed records one reported sample.
func (rs *ResourceSampler) addStreamed(ctx context.Context, p deploy.ProcessInfo, at time.Time, u deploy.Usage) {
	if ctx.Err() != nil {
		return // the sampler has stopped: the rows may be written already
	}
	row := rowOf(p, u)
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
