package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
)

// Prometheus finds the hosts it scrapes in a file (file_sd_configs), not in
// its configuration, so that the targets follow the endpoint sets: the
// deployer rewrites the file (SetTargets) whenever a group's replicas
// change (a scale up, a scale down, a death), and Prometheus, which watches the
// file, starts scraping a new replica within a second or two and stops
// scraping one that is gone. Each target carries the label `process`
// (`hop2#1`), so that every series in metrics.parquet says which replica it
// came from, beside `instance` (the metrics address).

// targetsFile is the file_sd file in Prometheus's directory.
const targetsFile = "targets.json"

// fileSDGroup is one entry of a file_sd file, as Prometheus reads it.
type fileSDGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// writeTargets replaces the targets file atomically (Prometheus must never
// read half of it) and records how many targets every later check expects.
func (p *prometheus) writeTargets(targets []Target) error {
	groups := make([]fileSDGroup, 0, len(targets))
	for _, t := range targets {
		labels := map[string]string{"process": t.Process}
		maps.Copy(labels, t.Labels)
		// Prometheus's own labels for where and how it scrapes a target.
		if t.Path != "" {
			labels["__metrics_path__"] = t.Path
		}
		for k, v := range t.Params {
			labels["__param_"+k] = v
		}
		groups = append(groups, fileSDGroup{Targets: []string{t.Addr}, Labels: labels})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	// Prometheus reads the file when it changes: a rename, never half.
	if err := renameio.WriteFile(filepath.Join(p.dir, targetsFile), b, 0o600); err != nil {
		return fmt.Errorf("Prometheus: targets: %w", err)
	}
	p.targets.Store(int64(len(targets)))
	return nil
}

// LastScrapeWait bounds AwaitScrape: two scrape intervals and a second, as
// finalScrape's.
const LastScrapeWait = 2*ScrapeInterval + time.Second

// AwaitScrape waits, within LastScrapeWait, until
// Prometheus has scraped each of the listeners addrs gives, successfully,
// in a scrape that started after since; it reports whether it did. addrs
// is asked again on every look, so that a replica that exits meanwhile
// (and has nothing more to be scraped) is no longer waited for. A replica
// scaled away waits for it after its drain, so that the calls it served
// since the last scrape are counted before it leaves the targets.
func (t *Telemetry) AwaitScrape(ctx context.Context, since time.Time, addrs func() []string) bool {
	if !t.Metrics() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, LastScrapeWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if t.prometheus.scrapedAfter(ctx, addrs(), since) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.prometheus.done:
			return true
		case <-tick.C:
		}
	}
}
