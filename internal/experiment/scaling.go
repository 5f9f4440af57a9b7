package experiment

import (
	"slices"

	"github.com/svclab/svclab/internal/deploy"
)

// ScalingRow is one row of scaling.parquet: one metric of one autoscaler
// decision (docs/RESULTS.md).
type ScalingRow struct {
	// TS is seconds since the start of the measurement, as in
	// resources.parquet; decisions of the warm-up are negative.
	TS             float64 `parquet:"t_s"`
	Group          string  `parquet:"group"`
	Metric         string  `parquet:"metric"`
	UtilizationPct int64   `parquet:"utilization_pct"`
	TargetPct      int64   `parquet:"target_pct"`
	Current        int64   `parquet:"current"`
	Proposed       int64   `parquet:"proposed"`
	Desired        int64   `parquet:"desired"`
	Reason         string  `parquet:"reason"`
	Error          string  `parquet:"error"`
}

// autoscaled reports whether any group of dep has an autoscaler.
func autoscaled(dep deploy.Deployment) bool {
	for _, g := range dep.Topology().Groups {
		if g.Autoscale != nil {
			return true
		}
	}
	return false
}

// Follow makes the sampler also sample, from its next tick on, every
// process list returns that it does not sample yet: the replicas an
// autoscaler starts during a run. Call it before Start.
func (rs *ResourceSampler) Follow(list func() []Sampled) { rs.follow = list }

// followNew adds the processes Follow's list has and the sampler has not;
// it runs on the sampling goroutine, which alone reads procs.
func (rs *ResourceSampler) followNew() {
	if rs.follow == nil {
		return
	}
	for _, s := range rs.follow() {
		if !slices.ContainsFunc(rs.procs, func(p Sampled) bool { return p.Process.PID == s.Process.PID && p.Process.Name == s.Process.Name }) {
			rs.procs = append(rs.procs, s)
			rs.mu.Lock()
			rs.joined = append(rs.joined, s.Process)
			rs.mu.Unlock()
		}
	}
}

// Joined lists the processes the sampler added through Follow.
func (rs *ResourceSampler) Joined() []deploy.ProcessInfo {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.joined)
}

// sampledOf lists a deployment's processes for the sampler.
func sampledOf(dep deploy.Deployment) []Sampled {
	var out []Sampled
	for _, dp := range dep.Processes() {
		out = append(out, Sampled{Process: dp.Info(), Source: dp.Resources()})
	}
	return out
}
