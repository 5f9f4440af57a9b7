package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/procgroup"
)

// tailLines is how many of a program's last log lines an error carries,
// as many as of a host's.
const tailLines = 40

// ScrapeInterval is how often the run's Prometheus scrapes every host.
const ScrapeInterval = time.Second

// scraped are the series kept from a run: svclab's RED metrics and each
// host's CPU, memory and goroutines; and of Envoy proxies whose stats are
// scraped (the exec app's, EnvoyStats), what EnvoyStats keeps.
const scraped = `{__name__=~"svclab_.*|process_cpu_seconds_total|process_resident_memory_bytes|go_goroutines|envoy_.*"}`

// EnvoyStatsPath is where an Envoy's admin API serves its stats to
// Prometheus.
const EnvoyStatsPath = "/stats/prometheus"

// EnvoyStats are the query parameters that keep an Envoy's stats to its
// requests, connections and their latencies, per listener and per
// cluster of a hop (to_<listener>: not its collector's), of those it has
// used: what a mesh's dashboards
// show of each hop. Envoy matches the filter against its own stat names
// (cluster.to_out_web_db.upstream_rq_total), before it names them for
// Prometheus (envoy_cluster_upstream_rq_total{envoy_cluster_name=...}).
var EnvoyStats = map[string]string{
	"usedonly": "true",
	"filter":   `^(cluster\.to_[^.]+\.upstream_(rq_total|cx_total|rq_time|rq_[1-5]xx)|http\.[^.]+\.downstream_(rq_total|cx_total|rq_time|rq_[1-5]xx)|tcp\.[^.]+\.downstream_cx_total)$`,
}

// prometheus is the metrics program of a deployment with deploy.metrics.
type prometheus struct {
	cmd     *exec.Cmd
	group   *procgroup.Leader
	done    chan struct{}
	log     string
	web     string // base URL
	start   time.Time
	dir     string
	targets atomic.Int64 // how many targets the targets file lists
}

// startPrometheus starts Prometheus scraping every host's metrics every
// ScrapeInterval, and waits until it is ready or ctx ends.
func (t *Telemetry) startPrometheus(ctx context.Context, targets []Target) (_ *prometheus, err error) {
	bin, err := deploy.PrometheusPath()
	if err != nil {
		return nil, err
	}
	addrs, err := ports.Free(1)
	if err != nil {
		return nil, fmt.Errorf("Prometheus: %w", err)
	}
	dir := filepath.Join(t.cfg.Dir, "prometheus")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("Prometheus: %w", err)
	}
	// The targets come from a file the deployer rewrites on every scale
	// (targets.go).
	conf := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n  - job_name: svclab\n    file_sd_configs:\n      - files: [%s]\n        refresh_interval: 1s\n",
		ScrapeInterval, ScrapeInterval*9/10, strconv.Quote(filepath.Join(dir, targetsFile)))
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("Prometheus: %w", err)
	}
	p := &prometheus{log: filepath.Join(dir, "prometheus.log"), web: "http://" + addrs[0], start: time.Now(), dir: dir}
	if err := p.writeTargets(targets); err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, "--config.file="+confPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addrs[0], "--log.level=warn")
	ready := func(ctx context.Context) bool { return httpOK(ctx, p.web+"/-/ready") }
	if p.group, p.done, err = t.startProgram(ctx, "Prometheus", p.cmd, p.log, ready); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *prometheus) stop() { stopGroup(p.group, p.done) }

// scraping waits until Prometheus has scraped every target once, or ctx
// ends: Prometheus hands its scrapers their targets some seconds after it
// starts, and a run must not begin before its metrics are recorded.
func (p *prometheus) scraping(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		ok, why := p.allUp(ctx)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("Prometheus: not scraping every host: %s: %w", last, context.Cause(ctx))
		case <-p.done:
			return fmt.Errorf("Prometheus exited (%s); its log:\n%s", p.cmd.ProcessState, logTail(p.log))
		case <-tick.C:
		}
	}
}

// finalScrape waits, before the hosts stop, until Prometheus has scraped
// every host once more, so that the last calls are in the series; it gives
// up after two intervals and a second.
func (p *prometheus) finalScrape(ctx context.Context) {
	since := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*ScrapeInterval+time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, _ := p.scrapedSince(ctx, since); ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			return
		case <-tick.C:
		}
	}
}

// allUp reports whether every target has been scraped and is up, and
// what is missing when not.
func (p *prometheus) allUp(ctx context.Context) (bool, string) {
	return p.scrapedSince(ctx, time.Time{})
}

// activeTarget is one of Prometheus's active targets, as its API says.
type activeTarget struct {
	ScrapeURL  string    `json:"scrapeUrl"`
	Health     string    `json:"health"`
	LastError  string    `json:"lastError"`
	LastScrape time.Time `json:"lastScrape"`
}

// activeTargets asks Prometheus for its active targets.
func (p *prometheus) activeTargets(ctx context.Context) ([]activeTarget, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.web+"/api/v1/targets?state=active", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets []activeTarget `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	return body.Data.ActiveTargets, nil
}

// scrapedSince reports whether every target is up and was last scraped
// after since, and what is missing when not.
func (p *prometheus) scrapedSince(ctx context.Context, since time.Time) (bool, string) {
	targets, err := p.activeTargets(ctx)
	if err != nil {
		return false, err.Error()
	}
	if n := p.targets.Load(); int64(len(targets)) != n {
		return false, fmt.Sprintf("%d of %d targets known", len(targets), n)
	}
	for _, t := range targets {
		if t.Health != "up" {
			return false, fmt.Sprintf("%s is %s %s", t.ScrapeURL, t.Health, t.LastError)
		}
		if !t.LastScrape.After(since) {
			return false, fmt.Sprintf("%s not scraped since %s", t.ScrapeURL, since)
		}
	}
	return true, ""
}

// scrapedAfter reports whether Prometheus has scraped every one of addrs,
// successfully, in a scrape that started after since.
func (p *prometheus) scrapedAfter(ctx context.Context, addrs []string, since time.Time) bool {
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
	for _, a := range addrs {
		t, ok := last[a]
		if !ok || t.Health != "up" || !t.LastScrape.After(since) {
			return false
		}
	}
	return true
}

// series reads every sample of the deployment's series, as scraped: a
// range selector over the deployment's life, rather than a range query,
// whose evaluation steps would resample the series and miss what the last
// scrape before the hosts stopped saw.
func (p *prometheus) series(ctx context.Context) ([]deploy.Sample, error) {
	now := time.Now()
	life := int(now.Sub(p.start).Seconds()) + 60
	q := url.Values{
		"query": {fmt.Sprintf("%s[%ds]", scraped, life)},
		"time":  {strconv.FormatFloat(float64(now.UnixMilli())/1e3, 'f', 3, 64)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.web+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("Prometheus: query: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("Prometheus: query: HTTP %s: %w", resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("Prometheus: query: %s", body.Error)
	}
	var out []deploy.Sample
	for _, r := range body.Data.Result {
		name := r.Metric["__name__"]
		labels := map[string]string{}
		for k, v := range r.Metric {
			if k != "__name__" {
				labels[k] = v
			}
		}
		if le, ok := labels["le"]; ok {
			labels["le"] = canonicalLe(le)
		}
		for _, v := range r.Values {
			ts, _ := v[0].(float64)
			s, _ := v[1].(string)
			val, err := strconv.ParseFloat(s, 64)
			if err != nil {
				continue
			}
			out = append(out, deploy.Sample{T: time.UnixMilli(int64(ts * 1e3)), Name: name, Labels: labels, Value: val})
		}
	}
	return out, nil
}

// canonicalLe writes a histogram bound as Go's client does ("5e-05",
// "0.001"), whatever host served it: the Java client writes "5.0E-5", and
// Prometheus 2 keeps the label as scraped, so the same bucket of a Java and
// a Go host would be two series.
func canonicalLe(le string) string {
	f, err := strconv.ParseFloat(le, 64)
	if err != nil {
		return le
	}
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// httpOK reports whether GET u answers 200 within a second.
func httpOK(ctx context.Context, u string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// logTail is the end of a program's log file, indented.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return deploy.IndentTail(lines)
}

// stopGroup ends a program's process group (SIGTERM, SIGKILL after a
// grace) and waits for it. A program that has exited already is reaped,
// or about to be, and gets nothing: its group's id may be another's.
func stopGroup(g *procgroup.Leader, done <-chan struct{}) {
	if g == nil {
		return
	}
	_ = g.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return
	case <-time.After(3 * time.Second):
	}
	_ = g.Signal(syscall.SIGKILL)
	<-done
}
