// Package autoscale is the Kubernetes HorizontalPodAutoscaler's algorithm,
// as its documentation states it ("Algorithm details" of Horizontal Pod
// Autoscaling, kubernetes.io) and with the defaults of autoscaling/v2, for
// processes instead of pods. It is pure: the caller brings each replica's
// readings and the time, and applies the decision.
//
// One decision, per metric (resource utilization: CPU or memory):
//
//   - Replicas that are shutting down are left out. For CPU, a replica not
//     yet ready, or whose reading began before it was ready, is set aside;
//     a replica without a reading is "missing".
//   - utilization = ⌊100 · Σ usage / Σ request⌋ over the rest, and the
//     usage ratio = utilization / target.
//   - Nothing set aside or missing: within the tolerance (|1 − ratio| ≤
//     0.1) the count stays, else desired = ⌈ratio · replicas counted⌉.
//   - Otherwise the missing count as using 100% of the target on a scale
//     down and 0% on a scale up, and the replicas set aside as 0% on a
//     scale up; the ratio is computed again over them all, and if it is
//     within the tolerance or points the other way, the count stays.
//
// Then: the largest proposal of the metrics wins (a metric that cannot be
// read blocks a scale down); a scale down goes no lower than the highest
// proposal within the stabilization window (300 s); a scale up adds at
// most max(4 replicas, 100%) per 15 s, the default scaleUp policies; and
// the result is held within min and max.
package autoscale

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The metrics an autoscaler reads.
const (
	CPU    = "cpu"
	Memory = "memory"
)

// The default scaleUp policies of autoscaling/v2: in any 15 s, add up to 4
// replicas or 100% of those at its start, whichever is more.
const (
	ScaleUpPeriod  = 15 * time.Second
	ScaleUpPods    = 4
	ScaleUpPercent = 100
)

// Replica is what the autoscaler knows of one replica at a decision.
type Replica struct {
	Name string
	// Ready is whether the replica passes its health checks.
	Ready bool
	// CPUWhileReady is whether its CPU reading covers only time it was
	// ready; a CPU reading that began earlier is set aside, as the HPA
	// sets aside the CPU of pods that are initialising.
	CPUWhileReady bool
	// Usage maps a metric to the reading, in the request's unit (cores
	// of CPU on average over the sync period; bytes of memory). A metric
	// absent here is missing for this replica.
	Usage map[string]float64
	// ShuttingDown replicas are left out altogether.
	ShuttingDown bool
}

// Target is one metric the autoscaler keeps at a utilization.
type Target struct {
	Metric string
	// Utilization is the target, in percent of the request (1 to 100).
	Utilization int
	// Request is each replica's request (its limit), in the usage's
	// unit: cores, or bytes.
	Request float64
}

// Config is one group's autoscaler.
type Config struct {
	Min, Max        int
	Targets         []Target
	Tolerance       float64
	ScaleDownWindow time.Duration
}

// Proposal is what one metric proposes.
type Proposal struct {
	Metric string
	// Utilization is the average utilization in percent over the
	// replicas counted, before the missing and set-aside ones are
	// filled in (what the HPA reports in its status).
	Utilization int
	Target      int
	// Replicas is the count proposed; meaningless when Err is set.
	Replicas int
	Err      error
}

// Decision is one sync of the autoscaler.
type Decision struct {
	Time      time.Time
	Current   int
	Proposals []Proposal
	// Recommended is the largest proposal, before stabilization and
	// limits.
	Recommended int
	// Desired is the count to scale to.
	Desired int
	// Reason says what bounded Desired, if anything did: "tolerance",
	// "stabilization window", "scale-up limit", "min", "max", "metric
	// missing".
	Reason string
}

// Autoscaler keeps the history a decision needs: past recommendations (for
// the stabilization window) and past scale-ups (for the rate limit).
type Autoscaler struct {
	cfg     Config
	recs    []timed
	scaleUp []timed
}

type timed struct {
	t time.Time
	n int
}

// New returns an autoscaler for cfg.
func New(cfg Config) (*Autoscaler, error) {
	switch {
	case cfg.Min < 1 || cfg.Max < cfg.Min:
		return nil, fmt.Errorf("autoscale: min %d and max %d: want 1 ≤ min ≤ max", cfg.Min, cfg.Max)
	case len(cfg.Targets) == 0:
		return nil, errors.New("autoscale: no target")
	}
	for _, t := range cfg.Targets {
		if t.Utilization < 1 || t.Utilization > 100 || t.Request <= 0 {
			return nil, fmt.Errorf("autoscale: %s target %d%% of %g: want 1 to 100%% of a positive request", t.Metric, t.Utilization, t.Request)
		}
	}
	return &Autoscaler{cfg: cfg}, nil
}

// Decide computes the desired replica count at now, with current replicas
// (those the group is meant to have) and their readings. The caller scales
// to Desired and then calls Scaled.
func (a *Autoscaler) Decide(now time.Time, current int, replicas []Replica) Decision {
	d := Decision{Time: now, Current: current}
	recommended := -1
	var failed bool
	for _, t := range a.cfg.Targets {
		p := propose(current, replicas, t, a.cfg.Tolerance)
		d.Proposals = append(d.Proposals, p)
		if p.Err != nil {
			failed = true
			continue
		}
		recommended = max(recommended, p.Replicas)
	}
	switch {
	case recommended < 0:
		d.Recommended, d.Desired, d.Reason = current, a.clamp(current), "metric missing"
		if d.Desired != current {
			d.Reason = a.reason(current, d.Desired)
		}
		return d
	case failed && recommended < current:
		// A metric that cannot be read blocks a scale down.
		recommended, d.Reason = current, "metric missing"
	}
	d.Recommended = recommended
	d.Desired = a.stabilize(now, current, recommended)
	if d.Desired != recommended && d.Reason == "" {
		d.Reason = "stabilization window"
	}
	if d.Desired > current {
		if limit := a.scaleUpLimit(now, current); d.Desired > limit {
			d.Desired, d.Reason = limit, "scale-up limit"
		}
	}
	if c := a.clamp(d.Desired); c != d.Desired {
		d.Desired, d.Reason = c, a.reason(d.Desired, c)
	}
	if d.Reason == "" && recommended == current && len(d.Proposals) > 0 {
		d.Reason = "tolerance"
	}
	return d
}

// Scaled records that the group went from one count to another at now.
func (a *Autoscaler) Scaled(now time.Time, from, to int) {
	if to > from {
		a.scaleUp = append(a.scaleUp, timed{now, to - from})
	}
}

func (a *Autoscaler) clamp(n int) int { return min(max(n, a.cfg.Min), a.cfg.Max) }

func (a *Autoscaler) reason(before, after int) string {
	if after > before {
		return "min"
	}
	return "max"
}

// stabilize records the recommendation and returns the count the window
// allows: a scale down goes no lower than the highest recommendation
// within the window; a scale up (whose window is 0 by default) is not
// held back.
func (a *Autoscaler) stabilize(now time.Time, current, rec int) int {
	a.recs = append(a.recs, timed{now, rec})
	cut := now.Add(-a.cfg.ScaleDownWindow)
	a.recs = slices.DeleteFunc(a.recs, func(r timed) bool { return r.t.Before(cut) })
	down := rec
	for _, r := range a.recs {
		down = max(down, r.n)
	}
	out := current
	if out < rec {
		out = rec
	}
	if out > down {
		out = down
	}
	return out
}

// scaleUpLimit is the most replicas the default scaleUp policies allow now.
func (a *Autoscaler) scaleUpLimit(now time.Time, current int) int {
	cut := now.Add(-ScaleUpPeriod)
	a.scaleUp = slices.DeleteFunc(a.scaleUp, func(e timed) bool { return !e.t.After(cut) })
	added := 0
	for _, e := range a.scaleUp {
		added += e.n
	}
	start := current - added
	byPods := start + ScaleUpPods
	byPercent := int(math.Ceil(float64(start) * (1 + ScaleUpPercent/100.0)))
	return max(byPods, byPercent)
}

// propose is the replica calculator of one resource metric.
func propose(current int, replicas []Replica, t Target, tolerance float64) Proposal {
	p := Proposal{Metric: t.Metric, Target: t.Utilization, Replicas: current}
	usage := map[string]float64{}
	var missing, unready []string
	for _, r := range replicas {
		if r.ShuttingDown {
			continue
		}
		v, ok := r.Usage[t.Metric]
		switch {
		case !ok:
			missing = append(missing, r.Name)
		case t.Metric == CPU && (!r.Ready || !r.CPUWhileReady):
			unready = append(unready, r.Name)
		default:
			usage[r.Name] = v
		}
	}
	if len(usage) == 0 {
		p.Err = fmt.Errorf("%s: no reading from any ready replica", t.Metric)
		return p
	}
	ratio, util := utilization(usage, t)
	p.Utilization = util
	upWithUnready := len(unready) > 0 && ratio > 1
	if !upWithUnready && len(missing) == 0 {
		if math.Abs(1-ratio) <= tolerance {
			return p
		}
		p.Replicas = int(math.Ceil(ratio * float64(len(usage))))
		return p
	}
	if len(missing) > 0 {
		fill := 0.0
		if ratio < 1 {
			fill = float64(t.Utilization) / 100 * t.Request
		}
		if ratio != 1 {
			for _, n := range missing {
				usage[n] = fill
			}
		}
	}
	if upWithUnready {
		for _, n := range unready {
			usage[n] = 0
		}
	}
	newRatio, _ := utilization(usage, t)
	if math.Abs(1-newRatio) <= tolerance || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		return p
	}
	n := int(math.Ceil(newRatio * float64(len(usage))))
	if (newRatio < 1 && n > current) || (newRatio > 1 && n < current) {
		return p
	}
	p.Replicas = n
	return p
}

// utilization is the usage ratio and the utilization in whole percent
// over the readings, in the HPA's integer arithmetic: usage and requests in
// thousandths (Kubernetes' milli-units), the percentage truncated.
func utilization(usage map[string]float64, t Target) (float64, int) {
	var sum int64
	for _, v := range usage {
		sum += int64(math.Round(v * 1000))
	}
	req := int64(math.Round(t.Request*1000)) * int64(len(usage))
	util := int(sum * 100 / req)
	return float64(util) / float64(t.Utilization), util
}
