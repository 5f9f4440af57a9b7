package local

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Prometheus finds the hosts it scrapes in a file (file_sd_configs), not in
// its configuration, so that the targets follow the endpoint sets: the
// deployer rewrites the file whenever a group's replicas change (pushPeers:
// a scale up, a scale down, a death), and Prometheus, which watches the
// file, starts scraping a new replica within a second or two and stops
// scraping one that is gone. Each target carries the label `process`
// (`hop2#1`), so that every series in metrics.parquet says which replica it
// came from, beside `instance` (the metrics address).

// targetsFile is the file_sd file in Prometheus's directory.
const targetsFile = "targets.json"

// scrapeTarget is one host's metrics listener.
type scrapeTarget struct {
	addr, process string
}

// fileSDGroup is one entry of a file_sd file, as Prometheus reads it.
type fileSDGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// writeTargets replaces the targets file atomically (Prometheus must never
// read half of it) and records how many targets every later check expects.
func (p *prometheus) writeTargets(targets []scrapeTarget) error {
	groups := make([]fileSDGroup, 0, len(targets))
	for _, t := range targets {
		groups = append(groups, fileSDGroup{Targets: []string{t.addr}, Labels: map[string]string{"process": t.process}})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(p.dir, targetsFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("metrics backend: targets: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("metrics backend: targets: %w", err)
	}
	p.targets.Store(int64(len(targets)))
	return nil
}

// scrapeTargets are the metrics listeners of the live processes.
func (d *Deployment) scrapeTargets() []scrapeTarget {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []scrapeTarget
	for _, p := range d.processes {
		if p.metrics != "" && !p.exited() && (!p.retired.Load() || d.mesh.lingers(p)) {
			out = append(out, scrapeTarget{addr: p.metrics, process: p.info.Name})
		}
	}
	return out
}

// pushScrapeTargets points Prometheus at the live processes.
func (d *Deployment) pushScrapeTargets() error {
	if d.mesh == nil || d.mesh.prometheus == nil {
		return nil
	}
	return d.mesh.prometheus.writeTargets(d.scrapeTargets())
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
