package local

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/svclab/svclab/internal/deploy/telemetry"
	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// The deployer's side of deploy.metrics: each replica's metrics listener,
// and the scrape targets that follow the replicas (telemetry.SetTargets,
// from pushPeers).
//
// Draining before scrape removal. A replica scaled away must not leave
// Prometheus's targets with the calls it served since the last scrape
// uncounted: its series would end below what it did, and metrics.parquet
// would disagree with the load generator. So a victim of a scale down
// lingers in the targets while the deployer takes it out of its callers'
// sets, drains it (Control.Drain: no new calls, those in flight finish)
// and waits for one scrape that started after the drain ended
// (telemetry.AwaitScrape, bounded, so that a scale down never hangs on
// Prometheus); only then is it dropped from the targets and stopped.

// bindMetrics makes a metrics listener among the inherited sockets of each
// replica in ss, in ss's order; a Java or Python host, which binds its own
// listeners, gets an address instead (languages.go).
func (m *mesh) bindMetrics(ss []*sockets) error {
	for _, s := range ss {
		if m.byAddress != nil && m.byAddress(s.group) {
			l, err := bindByAddress(runtime.Endpoint{Transport: "http", Network: "tcp"})
			if err != nil {
				return fmt.Errorf("deploy.metrics: %w", err)
			}
			m.metricsAt = append(m.metricsAt, l)
			continue
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("deploy.metrics: listen: %w", err)
		}
		s.closers = append(s.closers, lis)
		f, err := lis.(*net.TCPListener).File()
		if err != nil {
			return fmt.Errorf("deploy.metrics: listener file: %w", err)
		}
		s.closers = append(s.closers, f)
		s.files = append(s.files, f)
		m.metricsAt = append(m.metricsAt, &hostv1.Listener{
			Endpoint: &hostv1.Endpoint{Transport: "http", Network: "tcp", Addr: lis.Addr().String()},
			Fd:       int32(2 + len(s.files)),
		})
	}
	return nil
}

// metricsFor gives a replica added after the start its own metrics
// listener, among its inherited sockets; it returns the index configure
// takes, or -1 without deploy.metrics.
func (m *mesh) metricsFor(s *sockets) (int, error) {
	if m == nil || !m.metrics {
		return -1, nil
	}
	if err := m.bindMetrics([]*sockets{s}); err != nil {
		return -1, err
	}
	return len(m.metricsAt) - 1, nil
}

// scrapeTargets are the metrics listeners of the live processes, and of
// the victims that linger.
func (d *Deployment) scrapeTargets() []telemetry.Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []telemetry.Target
	for _, p := range d.processes {
		if p.metrics != "" && !p.exited() && (!p.retired.Load() || d.mesh.lingers(p)) {
			out = append(out, telemetry.Target{Addr: p.metrics, Process: p.info.Name})
		}
	}
	return out
}

// pushScrapeTargets points Prometheus at the live processes.
func (d *Deployment) pushScrapeTargets() error {
	if !d.mesh.telemetry().Metrics() {
		return nil
	}
	return d.mesh.tel.SetTargets(d.scrapeTargets())
}

// linger keeps victims in the scrape targets until lastScrape lets them go.
func (m *mesh) linger(victims []*process) {
	if !m.telemetry().Metrics() {
		return
	}
	m.lingerMu.Lock()
	defer m.lingerMu.Unlock()
	if m.lingering == nil {
		m.lingering = map[*process]bool{}
	}
	for _, v := range victims {
		if v.metrics != "" {
			m.lingering[v] = true
		}
	}
}

// lingers reports whether p is a victim kept in the scrape targets.
func (m *mesh) lingers(p *process) bool {
	if m == nil {
		return false
	}
	m.lingerMu.Lock()
	defer m.lingerMu.Unlock()
	return m.lingering[p]
}

// lastScrape drains victims (which their callers no longer send to) and
// waits until Prometheus has scraped each of them after its drain; then
// it drops them from the targets. Without deploy.metrics it does nothing:
// stopping drains them anyway.
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
		m.lingerMu.Lock()
		for _, v := range kept {
			delete(m.lingering, v)
		}
		m.lingerMu.Unlock()
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
	running := func() []string {
		var out []string
		for _, v := range kept {
			if !v.exited() { // an exited one has nothing more to scrape
				out = append(out, v.metrics)
			}
		}
		return out
	}
	if !m.tel.AwaitScrape(ctx, time.Now(), running) {
		d.logf("deployment %s: scaled-away replicas not scraped within %s of their drain; their last counters may be missing", d.id, telemetry.LastScrapeWait)
	}
}
