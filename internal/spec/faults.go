package spec

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Faults is [deploy.faults]: at most one fault of each kind, each a table
// of scalars, so that every value can be a factor
// ("deploy.faults.link_cut.duration"). Times are offsets within the
// measurement window (after the warm-up). Names follow Istio's fault
// injection (delay, abort) where they have one. This package decodes the
// table; runtime.Resolve checks it, every key in one place, as it
// resolves each fault against the topology.
type Faults struct {
	LatencySpike *LatencySpike `toml:"latency_spike"`
	Reset        *ResetFault   `toml:"reset"`
	LinkCut      *LinkCut      `toml:"link_cut"`
	Kill         *KillFault    `toml:"kill"`
}

// FaultWindow is when a fault acts: from Start for Duration, again every
// Every when Every is set. The fault tables have these keys each, written
// out rather than embedded so that strict decoding names them.
type FaultWindow struct {
	// Target names the group (or a component of it) whose inbound hop the
	// fault acts on: every call another group makes to it.
	Target string `toml:"target"`
	// Start is the offset of the first window in the measurement.
	Start Duration `toml:"start"`
	// Duration is the window's length; 0 lasts to the end of the run.
	Duration Duration `toml:"duration"`
	// Every repeats the window with this period; 0 does not repeat.
	Every Duration `toml:"every"`
}

// LatencySpike is [deploy.faults.latency_spike]: Delay added to the
// connections into Target, a Probability of them, during each window.
type LatencySpike struct {
	Target      string   `toml:"target"`
	Start       Duration `toml:"start"`
	Duration    Duration `toml:"duration"`
	Every       Duration `toml:"every"`
	Delay       Duration `toml:"delay"`
	Probability float64  `toml:"probability"`
}

// ResetFault is [deploy.faults.reset]: a Fraction of the connections into
// Target is reset (TCP RST) during each window.
type ResetFault struct {
	Target   string   `toml:"target"`
	Start    Duration `toml:"start"`
	Duration Duration `toml:"duration"`
	Every    Duration `toml:"every"`
	Fraction float64  `toml:"fraction"`
}

// LinkCut is [deploy.faults.link_cut]: the hop into Target carries nothing
// during each window: open connections are closed and new ones refused.
type LinkCut struct {
	Target   string   `toml:"target"`
	Start    Duration `toml:"start"`
	Duration Duration `toml:"duration"`
	Every    Duration `toml:"every"`
}

// KillFault is [deploy.faults.kill]: one replica of Target's group is
// killed (SIGKILL) at Start and not restarted.
type KillFault struct {
	Target string   `toml:"target"`
	Start  Duration `toml:"start"`
	// Replica is the ordinal of the replica killed, from 0.
	Replica int `toml:"replica"`
}

// Fault kinds, the names of the tables of [deploy.faults].
const (
	FaultLatencySpike = "latency_spike"
	FaultReset        = "reset"
	FaultLinkCut      = "link_cut"
	FaultKill         = "kill"
)

// Window is the fault's timing.
func (l *LatencySpike) Window() FaultWindow {
	return FaultWindow{Target: l.Target, Start: l.Start, Duration: l.Duration, Every: l.Every}
}

// Window is the fault's timing.
func (r *ResetFault) Window() FaultWindow {
	return FaultWindow{Target: r.Target, Start: r.Start, Duration: r.Duration, Every: r.Every}
}

// Window is the fault's timing.
func (c *LinkCut) Window() FaultWindow {
	return FaultWindow{Target: c.Target, Start: c.Start, Duration: c.Duration, Every: c.Every}
}

// Any reports whether any fault is set.
func (f Faults) Any() bool {
	return f.LatencySpike != nil || f.Reset != nil || f.LinkCut != nil || f.Kill != nil
}

// startKeys are the start keys of the faults set to start after the
// measurement's beginning, in the order latency_spike, reset, link_cut,
// kill.
func (f Faults) startKeys() []string {
	var out []string
	add := func(kind string, start Duration) {
		if start > 0 {
			out = append(out, "deploy.faults."+kind+".start")
		}
	}
	if f.LatencySpike != nil {
		add(FaultLatencySpike, f.LatencySpike.Start)
	}
	if f.Reset != nil {
		add(FaultReset, f.Reset.Start)
	}
	if f.LinkCut != nil {
		add(FaultLinkCut, f.LinkCut.Start)
	}
	if f.Kill != nil {
		add(FaultKill, f.Kill.Start)
	}
	return out
}

// Resilience is [deploy.resilience]: the client middleware of every
// cross-process hop (retries, a per-call timeout, a circuit breaker), in
// the words of Envoy's and Finagle's retry policies.
type Resilience struct {
	// Timeout bounds each attempt; 0 sets none.
	Timeout Duration `toml:"timeout"`
	// Retries is the most retries of one call; 0 retries nothing.
	Retries int `toml:"retries"`
	// RetryBudget is the share of calls that may be retries, over a
	// ten-second window (Finagle's RetryBudget, Envoy's budget_percent).
	RetryBudget float64 `toml:"retry_budget"`
	// Backoff is the base of the exponential backoff between attempts
	// (with full jitter); MaxBackoff caps it.
	Backoff    Duration `toml:"backoff"`
	MaxBackoff Duration `toml:"max_backoff"`
	// RetryOn lists the gRPC status codes retried, comma-separated, in
	// their snake-case names ("unavailable,resource_exhausted").
	RetryOn string `toml:"retry_on"`
	// Breaker is [deploy.resilience.breaker].
	Breaker Breaker `toml:"breaker"`
	// Groups are [deploy.resilience.groups.NAME]: the policy of calls
	// into one group (resilience_groups.go).
	Groups map[string]Resilience `toml:"groups"`
}

// Breaker is [deploy.resilience.breaker], a circuit breaker per peer: it
// opens after Failures consecutive failures or once the error ratio over
// Window reaches Ratio (with at least MinCalls calls), fails calls fast
// while open, and after Open lets Probes calls through (half-open).
type Breaker struct {
	Failures int      `toml:"failures"`
	Ratio    float64  `toml:"ratio"`
	Window   Duration `toml:"window"`
	MinCalls int      `toml:"min_calls"`
	Open     Duration `toml:"open"`
	Probes   int      `toml:"probes"`
}

// On reports whether the breaker is configured.
func (b Breaker) On() bool { return b.Failures > 0 || b.Ratio > 0 }

// On reports whether any resilience feature is configured.
func (r Resilience) On() bool {
	return r.Timeout > 0 || r.Retries > 0 || r.Breaker.On() || r.groupsOn()
}

// Defaults of [deploy.resilience]: Envoy's retry backoff (25 ms base, ten
// times that at most), its budget of 20% and the codes it retries on
// "unavailable"; gobreaker's half-open single probe.
const (
	DefaultRetryBudget     = 0.2
	DefaultBackoff         = 25 * time.Millisecond
	DefaultRetryOn         = "unavailable"
	DefaultBreakerWindow   = 10 * time.Second
	DefaultBreakerMinCalls = 20
	DefaultBreakerOpen     = 5 * time.Second
	DefaultBreakerProbes   = 1
)

// RetryableCodes are the gRPC codes retry_on may name: those that say the
// call did not reach the service or was refused by it, which are safe to
// retry; the codes a service answers with on purpose (invalid_argument,
// not_found …) are not.
var RetryableCodes = []string{"unavailable", "resource_exhausted", "deadline_exceeded", "aborted", "internal", "unknown"}

// checkResilience checks [deploy.resilience] and fills its defaults.
func (s *Spec) checkResilience() error {
	if err := s.checkResiliencePolicy("deploy.resilience", &s.Deploy.Resilience, nil); err != nil {
		return err
	}
	return s.checkResilienceGroups()
}

// checkResiliencePolicy checks the policy r written at key, and fills
// what is not written from base (a group's policy inherits the hop-wide
// one), or from the defaults when base is nil.
func (s *Spec) checkResiliencePolicy(key string, r, base *Resilience) error {
	if base != nil {
		inherit(s, key, r, base)
	}
	if r.Retries < 0 || r.Retries > 10 {
		return s.Errorf(key+".retries", "must be from 0 to 10 retries, got %d", r.Retries)
	}
	if !s.written(key+".retry_budget") && base == nil {
		r.RetryBudget = DefaultRetryBudget
	} else if math.IsNaN(r.RetryBudget) || r.RetryBudget < 0 || r.RetryBudget > 1 {
		return s.Errorf(key+".retry_budget", "must be a fraction of calls from 0 to 1, got %g", r.RetryBudget)
	}
	if !s.written(key+".backoff") && base == nil {
		r.Backoff = Duration(DefaultBackoff)
	}
	if !s.written(key+".max_backoff") && (base == nil || s.written(key+".backoff")) {
		r.MaxBackoff = 10 * r.Backoff
	} else if r.MaxBackoff < r.Backoff {
		return s.Errorf(key+".max_backoff", "must be at least backoff (%s), got %s", r.Backoff, r.MaxBackoff)
	}
	if !s.written(key+".retry_on") && base == nil {
		r.RetryOn = DefaultRetryOn
	}
	for _, c := range strings.Split(r.RetryOn, ",") {
		if c = strings.TrimSpace(c); !slices.Contains(RetryableCodes, c) {
			return s.Errorf(key+".retry_on", "must list gRPC codes from %q, comma-separated, got %q", RetryableCodes, c)
		}
	}
	b := &r.Breaker
	bkey := key + ".breaker"
	if b.Failures < 0 {
		return s.Errorf(bkey+".failures", "must be a number of consecutive failures, at least 1 (or 0 for none), got %d", b.Failures)
	}
	if math.IsNaN(b.Ratio) || b.Ratio < 0 || b.Ratio > 1 {
		return s.Errorf(bkey+".ratio", "must be an error ratio above 0 and at most 1 (or 0 for none), got %g", b.Ratio)
	}
	for _, d := range []struct {
		name string
		v    *Duration
		def  time.Duration
	}{{"window", &b.Window, DefaultBreakerWindow}, {"open", &b.Open, DefaultBreakerOpen}} {
		if !s.written(bkey+"."+d.name) && base == nil {
			*d.v = Duration(d.def)
		} else if *d.v <= 0 {
			return s.Errorf(bkey+"."+d.name, "must be positive, got %s", *d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{{"min_calls", &b.MinCalls, DefaultBreakerMinCalls}, {"probes", &b.Probes, DefaultBreakerProbes}} {
		if !s.written(bkey+"."+n.name) && base == nil {
			*n.v = n.def
		} else if *n.v < 1 {
			return s.Errorf(bkey+"."+n.name, "must be at least 1, got %d", *n.v)
		}
	}
	return nil
}
