package hostmesh

import (
	"context"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy/telemetry"
)

// Draining before scrape removal. A replica scaled away must not leave
// Prometheus's targets with the calls it served since the last scrape
// uncounted: its series would end below what it did, and metrics.parquet
// would disagree with the load generator. So a victim of a scale down
// lingers in the targets (Linger) while the deployer takes it out of its
// callers' sets; LastScrape then drains it (no new calls, those in flight
// finish) and waits for one scrape that started after the drain ended
// (telemetry.AwaitScrape, bounded, so that a scale down never hangs on
// Prometheus); only then is it dropped from the targets and stopped.

// lingering is a set of metrics addresses.
type lingering struct {
	mu    sync.Mutex
	addrs map[string]bool
}

// Victim is a replica being scaled away, as LastScrape sees it.
type Victim struct {
	Name string
	// Metrics is its metrics listener's address ("" without one).
	Metrics string
	// Exited reports whether it has exited: there is nothing more to
	// scrape.
	Exited func() bool
	// Drain makes it refuse new calls and returns once those in flight
	// have finished.
	Drain func(ctx context.Context) error
}

// Linger keeps the victims' metrics listeners in the scrape targets
// (Lingers) until LastScrape lets them go.
func (m *Mesh) Linger(victims []Victim) {
	if !m.Telemetry().Metrics() {
		return
	}
	l := &m.lingering
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs == nil {
		l.addrs = map[string]bool{}
	}
	for _, v := range victims {
		if v.Metrics != "" {
			l.addrs[v.Metrics] = true
		}
	}
}

// Lingers reports whether the metrics listener at addr is a victim's kept
// in the scrape targets.
func (m *Mesh) Lingers(addr string) bool {
	if m == nil {
		return false
	}
	m.lingering.mu.Lock()
	defer m.lingering.mu.Unlock()
	return m.lingering.addrs[addr]
}

// LastScrape drains the victims that linger (which their callers no longer
// send to), each within drainTimeout, and waits until Prometheus has
// scraped each of them after its drain; then it lets them go and calls
// release, which rewrites the targets without them. Without
// deploy.metrics it does nothing: stopping drains them anyway.
func (m *Mesh) LastScrape(ctx context.Context, victims []Victim, drainTimeout time.Duration, release func()) {
	var kept []Victim
	for _, v := range victims {
		if m.Lingers(v.Metrics) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		return
	}
	defer func() {
		m.lingering.mu.Lock()
		for _, v := range kept {
			delete(m.lingering.addrs, v.Metrics)
		}
		m.lingering.mu.Unlock()
		release()
	}()
	dctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	for _, v := range kept {
		if err := v.Drain(dctx); err != nil {
			// Stop drains it again; what it serves meanwhile may miss
			// the last scrape.
			m.logf("deployment %s: drain %s before its last scrape: %v", m.cfg.ID, v.Name, err)
		}
	}
	running := func() []string {
		var out []string
		for _, v := range kept {
			if !v.Exited() { // an exited one has nothing more to scrape
				out = append(out, v.Metrics)
			}
		}
		return out
	}
	if !m.tel.AwaitScrape(ctx, time.Now(), running) {
		m.logf("deployment %s: scaled-away replicas not scraped within %s of their drain; their last counters may be missing", m.cfg.ID, telemetry.LastScrapeWait)
	}
}

func (m *Mesh) logf(format string, args ...any) {
	if m.cfg.Logf != nil {
		m.cfg.Logf(format, args...)
	}
}
