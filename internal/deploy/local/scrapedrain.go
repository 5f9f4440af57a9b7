package local

import (
	"context"
	"net/url"
	"time"

	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Draining before scrape removal. A replica scaled away must not leave
// Prometheus's targets with the calls it served since the last scrape
// uncounted: its series would end below what it did, and metrics.parquet
// would disagree with the load generator. So a victim of a scale down
// lingers in the targets file while the deployer takes it out of its
// callers' sets, drains it (Control.Drain: no new calls, those in flight
// finish) and waits for one scrape that started after the drain ended;
// only then is it dropped from the targets and stopped. The wait is
// bounded (lastScrapeWait), so a scale down never hangs on Prometheus.

// lastScrapeWait bounds the wait for a drained replica's last scrape: two
// scrape intervals and a second, as finalScrape's.
const lastScrapeWait = 2*ScrapeInterval + time.Second

// linger keeps victims in the scrape targets until lastScrape lets them go.
func (m *mesh) linger(victims []*process) {
	if m == nil || m.prometheus == nil {
		return
	}
	p := m.prometheus
	p.lingerMu.Lock()
	defer p.lingerMu.Unlock()
	if p.lingering == nil {
		p.lingering = map[*process]bool{}
	}
	for _, v := range victims {
		if v.metrics != "" {
			p.lingering[v] = true
		}
	}
}

// lingers reports whether p is a victim kept in the scrape targets.
func (m *mesh) lingers(p *process) bool {
	if m == nil || m.prometheus == nil {
		return false
	}
	m.prometheus.lingerMu.Lock()
	defer m.prometheus.lingerMu.Unlock()
	return m.prometheus.lingering[p]
}

// lastScrape drains victims (which their callers no longer send to) and
// waits, within lastScrapeWait, until Prometheus has scraped each of them
// after its drain; then it drops them from the targets. Without
// deploy.metrics it does nothing: stopping drains them anyway.
func (d *Deployment) lastScrape(ctx context.Context, victims []*process) {
	m := d.mesh
	var kept []*process
	for _, v := range victims {
		if m.lingers(v) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		return
	}
	defer func() {
		m.prometheus.lingerMu.Lock()
		for _, v := range kept {
			delete(m.prometheus.lingering, v)
		}
		m.prometheus.lingerMu.Unlock()
		d.pushMu.Lock() // one writer of the targets file at a time
		defer d.pushMu.Unlock()
		if err := d.pushScrapeTargets(); err != nil {
			d.logf("deployment %s: %v", d.id, err)
		}
	}()
	dctx, cancel := context.WithTimeout(ctx, d.stopTimeout)
	defer cancel()
	for _, v := range kept {
		if err := d.controlProcess(v, func(cc hostv1.ControlClient) error {
			_, err := cc.Drain(dctx, &hostv1.DrainRequest{})
			return err
		}); err != nil {
			// Stop drains it again; what it serves meanwhile may miss
			// the last scrape.
			d.logf("deployment %s: drain %s before its last scrape: %v", d.id, v.info.Name, err)
		}
	}
	drained := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, lastScrapeWait)
	defer wcancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if m.prometheus.scrapedAfter(wctx, kept, drained) {
			return
		}
		select {
		case <-wctx.Done():
			d.logf("deployment %s: scaled-away replicas not scraped within %s of their drain; their last counters may be missing", d.id, lastScrapeWait)
			return
		case <-m.prometheus.done:
			return
		case <-tick.C:
		}
	}
}

// scrapedAfter reports whether Prometheus has scraped every one of procs
// that still runs, successfully, in a scrape that started after since.
func (p *prometheus) scrapedAfter(ctx context.Context, procs []*process, since time.Time) bool {
	targets, err := p.activeTargets(ctx)
	if err != nil {
		return false
	}
	last := map[string]activeTarget{}
	for _, t := range targets {
		if u, err := url.Parse(t.ScrapeURL); err == nil {
			last[u.Host] = t
		}
	}
	for _, pr := range procs {
		if pr.exited() {
			continue // nothing more to scrape
		}
		t, ok := last[pr.metrics]
		if !ok || t.Health != "up" || !t.LastScrape.After(since) {
			return false
		}
	}
	return true
}
