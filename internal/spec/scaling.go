package spec

import (
	"maps"
	"slices"
	"time"
)

// Scaling keys of [deploy]: how many processes serve each group, how a
// caller spreads its calls over them, and the autoscaler. The spec checks
// the values alone; runtime.Resolve checks that each key names a group or
// component of the chosen placement.

// The values of deploy.balancer.
const (
	// BalancerRoundRobin gives each healthy replica a call in turn.
	BalancerRoundRobin = "round_robin"
	// BalancerLeastOutstanding sends each call to the healthy replica
	// with the fewest calls in flight from this caller.
	BalancerLeastOutstanding = "least_outstanding"
)

// Balancers lists the values of deploy.balancer, the default first.
var Balancers = []string{BalancerRoundRobin, BalancerLeastOutstanding}

// Defaults of [deploy.autoscale.<group>], those of the Kubernetes
// HorizontalPodAutoscaler (kube-controller-manager's
// --horizontal-pod-autoscaler-sync-period and -tolerance, and the default
// scaleDown stabilizationWindowSeconds).
const (
	DefaultSyncPeriod      = 15 * time.Second
	DefaultScaleDownWindow = 300 * time.Second
	DefaultTolerance       = 0.1
)

// Autoscale is [deploy.autoscale.<group>]: the HPA of one group.
type Autoscale struct {
	// Min and Max bound the replicas; Min is also the count deployed
	// first, unless deploy.replicas names the group.
	Min int `toml:"min"`
	Max int `toml:"max"`
	// CPUTarget is the average CPU use to keep, in percent of each
	// process's CPU request (its limit, or one core); 0 leaves CPU out.
	CPUTarget int `toml:"cpu_target"`
	// MemoryTarget is the average resident memory to keep, in percent of
	// each process's memory limit; 0 leaves memory out.
	MemoryTarget int `toml:"memory_target"`
	// SyncPeriod is how often the autoscaler decides.
	SyncPeriod Duration `toml:"sync_period"`
	// ScaleDownWindow is the scale-down stabilization window: a scale-down
	// goes no lower than the highest recommendation made within it.
	ScaleDownWindow Duration `toml:"scale_down_window"`
	// Tolerance is how far the usage ratio may stray from 1 without a
	// change.
	Tolerance float64 `toml:"tolerance"`
}

// checkScaling checks deploy.replicas, deploy.balancer and
// deploy.autoscale, and fills the defaults left out.
func (s *Spec) checkScaling() error {
	d := &s.Deploy
	for _, k := range slices.Sorted(maps.Keys(d.Replicas)) {
		if n := d.Replicas[k]; n < 1 {
			return s.Errorf("deploy.replicas."+quoteKeyPart(k), "must be at least 1 process, got %d", n)
		}
	}
	if !s.written("deploy.balancer") {
		d.Balancer = BalancerRoundRobin
	}
	if !slices.Contains(Balancers, d.Balancer) {
		return s.Errorf("deploy.balancer", "must be one of %q, got %q", Balancers, d.Balancer)
	}
	for _, g := range slices.Sorted(maps.Keys(d.Autoscale)) {
		a := d.Autoscale[g]
		key := "deploy.autoscale." + quoteKeyPart(g)
		switch {
		case !s.written(key + ".min"):
			return s.Errorf(key, "needs min, the fewest replicas")
		case !s.written(key + ".max"):
			return s.Errorf(key, "needs max, the most replicas")
		case a.Min < 1:
			return s.Errorf(key+".min", "must be at least 1 process, got %d", a.Min)
		case a.Max < a.Min:
			return s.Errorf(key+".max", "must be at least min (%d), got %d", a.Min, a.Max)
		case a.CPUTarget == 0 && a.MemoryTarget == 0 && !s.written(key+".cpu_target") && !s.written(key+".memory_target"):
			return s.Errorf(key, "needs cpu_target or memory_target (or both), in percent")
		}
		for _, t := range []struct {
			name string
			v    int
		}{{"cpu_target", a.CPUTarget}, {"memory_target", a.MemoryTarget}} {
			if s.written(key+"."+t.name) && (t.v < 1 || t.v > 100) {
				return s.Errorf(key+"."+t.name, "must be a percentage from 1 to 100, got %d", t.v)
			}
		}
		if !s.written(key + ".sync_period") {
			a.SyncPeriod = Duration(DefaultSyncPeriod)
		} else if a.SyncPeriod <= 0 {
			return s.Errorf(key+".sync_period", "must be positive, got %s", a.SyncPeriod)
		}
		if !s.written(key + ".scale_down_window") {
			a.ScaleDownWindow = Duration(DefaultScaleDownWindow)
		} else if a.ScaleDownWindow < 0 {
			return s.Errorf(key+".scale_down_window", "must not be negative, got %s", a.ScaleDownWindow)
		}
		if !s.written(key + ".tolerance") {
			a.Tolerance = DefaultTolerance
		} else if a.Tolerance < 0 || a.Tolerance >= 1 {
			return s.Errorf(key+".tolerance", "must be from 0 up to (not including) 1, got %g", a.Tolerance)
		}
		d.Autoscale[g] = a
	}
	return nil
}

// ScalingKey is the spec key of a group or component name under a scaling
// table ("replicas", "autoscale"), quoted where the name needs it (a group
// name such as "hop2+hop3").
func ScalingKey(table, name string) string {
	return "deploy." + table + "." + quoteKeyPart(name)
}
