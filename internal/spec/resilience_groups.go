package spec

import (
	"maps"
	"slices"
)

// [deploy.resilience.groups.NAME] sets the policy of calls into one group
// (NAME is the group, or a component of it, as deploy.faults targets are
// named), as an Istio DestinationRule's traffic policy and a VirtualService's
// retries are set per destination host. A group's table takes every key of
// [deploy.resilience] (and its breaker table); what it does not write it
// inherits from [deploy.resilience], so
//
//	[deploy.resilience]
//	timeout = "1s"
//	[deploy.resilience.groups.payment]
//	retries = 0
//
// keeps the 1 s timeout on calls into payment and retries nothing there.
// Which names exist is the topology's to check (runtime.Resolve).

// resilienceKeys are the keys a group's table inherits, each with how to
// copy it from the hop-wide policy.
var resilienceKeys = []struct {
	name string
	copy func(dst, src *Resilience)
}{
	{"timeout", func(d, s *Resilience) { d.Timeout = s.Timeout }},
	{"retries", func(d, s *Resilience) { d.Retries = s.Retries }},
	{"retry_budget", func(d, s *Resilience) { d.RetryBudget = s.RetryBudget }},
	{"backoff", func(d, s *Resilience) { d.Backoff = s.Backoff }},
	{"max_backoff", func(d, s *Resilience) { d.MaxBackoff = s.MaxBackoff }},
	{"retry_on", func(d, s *Resilience) { d.RetryOn = s.RetryOn }},
	{"breaker.failures", func(d, s *Resilience) { d.Breaker.Failures = s.Breaker.Failures }},
	{"breaker.ratio", func(d, s *Resilience) { d.Breaker.Ratio = s.Breaker.Ratio }},
	{"breaker.window", func(d, s *Resilience) { d.Breaker.Window = s.Breaker.Window }},
	{"breaker.min_calls", func(d, s *Resilience) { d.Breaker.MinCalls = s.Breaker.MinCalls }},
	{"breaker.open", func(d, s *Resilience) { d.Breaker.Open = s.Breaker.Open }},
	{"breaker.probes", func(d, s *Resilience) { d.Breaker.Probes = s.Breaker.Probes }},
}

// inherit fills the keys of r (written at key) that the spec does not
// write from base.
func inherit(s *Spec, key string, r, base *Resilience) {
	for _, k := range resilienceKeys {
		if !s.written(key + "." + k.name) {
			k.copy(r, base)
		}
	}
}

// groupsOn reports whether a group's policy turns anything on.
func (r Resilience) groupsOn() bool {
	for _, g := range r.Groups {
		if g.On() {
			return true
		}
	}
	return false
}

// GroupNames are the names of [deploy.resilience.groups], sorted.
func (r Resilience) GroupNames() []string {
	return slices.Sorted(maps.Keys(r.Groups))
}

// checkResilienceGroups checks each group's policy, after the hop-wide
// one has its defaults.
func (s *Spec) checkResilienceGroups() error {
	r := &s.Deploy.Resilience
	for _, name := range r.GroupNames() {
		key := "deploy.resilience.groups." + name
		g := r.Groups[name]
		if len(g.Groups) > 0 {
			return s.Errorf(key+".groups", "groups are set once, in [deploy.resilience.groups.NAME], not inside a group's table")
		}
		if err := s.checkResiliencePolicy(key, &g, r); err != nil {
			return err
		}
		r.Groups[name] = g
	}
	return nil
}
