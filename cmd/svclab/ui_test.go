package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/load"
)

// browserSlot lets one browser test hold a Chromium at a time: they run
// beside the other CLI tests, but not beside each other, as a Chromium
// takes a core for a second or two as it starts and draws. (Run one after
// another before the parallel tests, they added 80-120 s to the
// package's time.)
var browserSlot = make(chan struct{}, 1)

// browser is a headless Chromium (Debian's) driven over the DevTools
// protocol; the test skips without one. It makes the test parallel, and
// holds the browser slot until the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not found (Debian's chromium package): the live view's browser test needs it")
	}
	t.Parallel()
	browserSlot <- struct{}{}
	t.Cleanup(func() { <-browserSlot })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1800),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// startUI starts svclab with --ui and returns the command and the view's
// URL, the first line it prints on stderr.
func startUI(t *testing.T, args ...string) (*uiCmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(svclabBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatalf("svclab %s printed nothing", strings.Join(args, " "))
	}
	first := sc.Text()
	url, ok := strings.CutPrefix(first, "live view: ")
	if !ok {
		t.Fatalf("first line %q, want the live view's URL", first)
	}
	url, _, _ = strings.Cut(url, " ")
	rest := &strings.Builder{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		for sc.Scan() {
			rest.WriteString(sc.Text() + "\n")
		}
	}()
	return &uiCmd{cmd, read}, url, rest
}

// uiCmd is a running svclab whose stderr is being read.
type uiCmd struct {
	cmd  *exec.Cmd
	read chan struct{}
}

// Wait waits for svclab to exit, once its stderr is read to the end.
func (c *uiCmd) Wait() error {
	<-c.read
	return c.cmd.Wait()
}

// openUI starts svclab with args (which hold --ui) and opens its page.
func openUI(t *testing.T, ctx context.Context, args ...string) (*uiCmd, *strings.Builder) {
	t.Helper()
	cmd, url, log := startUI(t, args...)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	return cmd, log
}

// writeSpec writes a spec file into dir and returns its path.
func writeSpec(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// text reads an element's text.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(sel))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func number(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// artifact saves a screenshot where a person can look at it:
// $SVCLAB_UI_SHOTS when set, else the test's temp dir.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("SVCLAB_UI_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// checkTotals compares the runs table's row for id with the run's
// summary.json total.
func checkTotals(t *testing.T, ctx context.Context, id, summaryPath string) {
	t.Helper()
	b, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	var s load.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var tot load.Operation
	for _, o := range s.Operations {
		if o.Name == "total" {
			tot = o
		}
	}
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	row := fmt.Sprintf(`#runs tr[data-id=%q] `, id)
	for sel, want := range map[string]string{
		"requests": strconv.FormatInt(tot.Count, 10), "errors": strconv.FormatInt(tot.Errors, 10),
		"p50": ms(tot.Latency.P50Ms), "p90": ms(tot.Latency.P90Ms), "p99": ms(tot.Latency.P99Ms), "max": ms(tot.Latency.MaxMs),
	} {
		if got := text(t, ctx, row+"td."+sel); got != want {
			t.Errorf("run %s: the page's %s is %s, summary.json's %s", id, sel, got, want)
		}
	}
}

// TestUILoad opens `svclab load --ui`'s page in a real browser while the
// load runs, with one generator and with two (load.generators, whose
// seconds the view merges): the numbers move, a reload in the middle
// still shows the run, the page says when it ended, and its totals are
// summary.json's, which for two generators is the merge of their logs.
func TestUILoad(t *testing.T) {
	ctx := browser(t)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
		if n.Add(1)%20 == 0 {
			http.Error(w, "every 20th fails", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	for _, gens := range []int{1, 2} {
		t.Run(fmt.Sprintf("generators=%d", gens), func(t *testing.T) {
			dir := t.TempDir()
			// One in 20 fails: the error rate's threshold breaks, the p99's holds.
			cmd, log := openUI(t, ctx, "load", "--ui", "-q", "--rate", "200", "--duration", "8s", "--warmup", "1s",
				"--set", "load.thresholds.error_rate=0.01", "--set", "load.thresholds.p99_ms=10000",
				"--generators", strconv.Itoa(gens), "--dir", dir, srv.URL+"/")
			waitFor(t, 15*time.Second, "requests on the page", func() bool { return number(text(t, ctx, "#cur-requests")) > 0 })
			first := number(text(t, ctx, "#cur-requests"))
			waitFor(t, 5*time.Second, "the numbers to move", func() bool { return number(text(t, ctx, "#cur-requests")) > first })
			if got := text(t, ctx, "#run-id"); got != "load" {
				t.Errorf("current run %q, want load", got)
			}
			// A reload mid-run replays the run so far.
			before := number(text(t, ctx, "#cur-requests"))
			if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the run after a reload", func() bool {
				return text(t, ctx, "#run-id") == "load" && number(text(t, ctx, "#cur-requests")) >= before
			})
			if got := text(t, ctx, "#status"); got != "running" {
				t.Errorf("status after the reload %q, want running", got)
			}
			waitFor(t, 5*time.Second, "the thresholds judged so far", func() bool {
				got := thresholdStates(t, ctx)
				return got["total: error_rate <= 0.01"] == "broken so far" && got["total: p99_ms <= 10000"] == "holds so far"
			})
			waitFor(t, 5*time.Second, "svclab load's own CPU and memory", func() bool {
				return strings.HasPrefix(text(t, ctx, "#processes tr"), "loadgensvclab load")
			})
			if _, err := os.Stat("../../internal/live/assets/uPlot.iife.min.js"); err == nil {
				charts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".chart canvas").length`))
				if err != nil {
					t.Fatal(err)
				}
				if charts < 5 {
					t.Errorf("%d charts drawn, want 5", charts)
				}
			}
			waitEnded(t, ctx, cmd, log, exitThresholds)
			if got := thresholdStates(t, ctx); got["total: error_rate <= 0.01"] != "broken" || got["total: p99_ms <= 10000"] != "holds" ||
				!strings.Contains(log.String(), "threshold broken: total: error_rate ") || strings.Contains(log.String(), "threshold broken: total: p99_ms") {
				t.Errorf("the page's verdict %v, svclab load's:\n%s", got, log)
			}
			if got, want := text(t, ctx, "#status"), "ended: 1 threshold(s) of load.thresholds broken"; got != want {
				t.Errorf("status %q, want %q", got, want)
			}
			if !strings.Contains(text(t, ctx, "#errors-by-class"), "http_500 ") {
				t.Errorf("errors by class %q, want http_500", text(t, ctx, "#errors-by-class"))
			}
			screenshot(t, ctx, fmt.Sprintf("ui-load-%d.png", gens))
			checkTotals(t, ctx, "load", filepath.Join(dir, "summary.json"))
		})
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	addrs, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0]
}

// TestUIMetricsScrapedByPrometheus: Debian's Prometheus scrapes /metrics
// (in OpenMetrics, which it asks for) while `svclab load --ui` runs, and
// stores the run's requests, errors and latency histogram.
func TestUIMetricsScrapedByPrometheus(t *testing.T) {
	t.Parallel()
	bin, err := deploy.PrometheusPath()
	if err != nil {
		t.Skip(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ui, web, dir := freeAddr(t), freeAddr(t), t.TempDir()
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: svclab\n    static_configs:\n      - targets: [%q]\n", ui)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	prom.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Process.Kill(); _ = prom.Wait() }()
	query := func(q string) (float64, bool) {
		resp, err := http.Get("http://" + web + "/api/v1/query?query=" + neturl.QueryEscape(q))
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) == 0 {
			return 0, false
		}
		s, _ := r.Data.Result[0].Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	waitFor(t, 30*time.Second, "prometheus ready", func() bool {
		resp, err := http.Get("http://" + web + "/-/ready")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "summary.json")
	_, stderr, code := svclab(t, ctx, nil, "load", "--ui="+ui, "-q", "--rate", "100", "--duration", "6s", "--warmup", "1s", "-o", out, srv.URL+"/")
	if code != 0 {
		t.Fatalf("svclab load: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var s load.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var count int64
	for _, o := range s.Operations {
		if o.Name == "total" {
			count = o.Count
		}
	}
	got, ok := query(`max_over_time(svclab_requests_total{run="load"}[5m])`)
	if !ok || got <= 0 || got > float64(count) {
		t.Errorf("Prometheus stored svclab_requests_total up to %v (ok %v); the run's total is %d", got, ok, count)
	}
	if n, ok := query(`max_over_time(svclab_request_latency_seconds_count{run="load"}[5m])`); !ok || n <= 0 {
		t.Errorf("Prometheus stored no latency histogram: %v %v", n, ok)
	}
	// up is 0 before svclab listens and after it has stopped.
	if up, ok := query(`max_over_time(up{job="svclab"}[5m])`); !ok || up != 1 {
		t.Errorf("no successful scrape of svclab recorded (max up %v)", up)
	}
}

// rows lists the run IDs of the page's runs table.
func rows(t *testing.T, ctx context.Context) []string {
	t.Helper()
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#runs tr")).map(r => r.dataset.id)`))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// waitEnded waits for the page to say the work ended, then for svclab
// to exit with status code.
func waitEnded(t *testing.T, ctx context.Context, cmd *uiCmd, log *strings.Builder, code int) {
	t.Helper()
	waitFor(t, 90*time.Second, "the page to say the work ended", func() bool { return strings.HasPrefix(text(t, ctx, "#status"), "ended") })
	if err := cmd.Wait(); cmd.cmd.ProcessState.ExitCode() != code {
		t.Fatalf("svclab: %v, want exit status %d\n%s", err, code, log)
	}
}

// TestUIRun opens `svclab run --ui`'s page in a real browser during a
// two-run experiment: the numbers move, the runs table grows, a reload
// during the second run still shows it (and the first's result), the
// page says when the experiment ended, and each run's totals equal its
// summary.json's.
func TestUIRun(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	const specText = `
[app]
name = "chain"
hops = 2

[deploy]
transport = "grpc"
metrics = true

[load]
rate = 100
warmup = "1s"
duration = "6s"
[load.thresholds]
p50_ms = 0.000001

[experiment]
name = "ui"
order = "sequential"
seed = 1
[experiment.factors]
"deploy.placement" = ["monolith", "split"]
`
	specPath := writeSpec(t, dir, "ui.toml", specText)
	cmd, log := openUI(t, ctx, "run", "--ui", "--no-report", "--results", filepath.Join(dir, "results"), specPath)
	waitFor(t, 5*time.Second, "the plan's progress", func() bool { return text(t, ctx, "#progress") == "0/2 runs" })
	waitFor(t, 60*time.Second, "requests on the page", func() bool { return number(text(t, ctx, "#cur-requests")) > 0 })
	first := number(text(t, ctx, "#cur-requests"))
	waitFor(t, 5*time.Second, "the numbers to move", func() bool { return number(text(t, ctx, "#cur-requests")) > first })
	waitFor(t, 5*time.Second, "the processes' resources", func() bool { return text(t, ctx, "#processes") != "" })
	if got := text(t, ctx, "#links"); !strings.HasPrefix(got, "Prometheus http://127.0.0.1:") {
		t.Errorf("links %q, want the run's Prometheus", got)
	}
	waitFor(t, 60*time.Second, "the first run's result", func() bool { return len(rows(t, ctx)) == 1 })
	firstRun := rows(t, ctx)[0]
	waitFor(t, 60*time.Second, "the second run's seconds", func() bool {
		id := text(t, ctx, "#run-id")
		return id != "" && id != firstRun && number(text(t, ctx, "#cur-requests")) > 0
	})
	second := text(t, ctx, "#run-id")
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the second run after a reload", func() bool {
		return text(t, ctx, "#run-id") == second && number(text(t, ctx, "#cur-requests")) > 0
	})
	if got := rows(t, ctx); len(got) != 1 || got[0] != firstRun {
		t.Errorf("runs table after the reload %v, want [%s]", got, firstRun)
	}
	// Every run breaks the threshold: exit status 99, as k6's.
	waitEnded(t, ctx, cmd, log, exitThresholds)
	if got := text(t, ctx, "#status"); got != "ended" {
		t.Errorf("status %q, want ended", got)
	}
	if n := strings.Count(log.String(), ": prometheus http://127.0.0.1:"); n != 2 {
		t.Errorf("svclab run said where a run's Prometheus is %d times, want 2:\n%s", n, log)
	}
	if got := text(t, ctx, "#progress"); got != "2/2 runs" {
		t.Errorf("progress %q, want 2/2 runs", got)
	}
	screenshot(t, ctx, "ui-run.png")
	ids := rows(t, ctx)
	if len(ids) != 2 || ids[1] != second {
		t.Fatalf("runs table %v, want %s and %s", ids, firstRun, second)
	}
	for _, id := range ids {
		m, _ := filepath.Glob(filepath.Join(dir, "results", "ui-*", "runs", id, "summary.json"))
		if len(m) != 1 {
			t.Fatalf("run %s: no summary.json", id)
		}
		checkTotals(t, ctx, id, m[0])
		if got := text(t, ctx, fmt.Sprintf(`#runs tr[data-id=%q] td.flags`, id)); !strings.Contains(got, "threshold broken: total: p50_ms") {
			t.Errorf("run %s's flags %q, want its broken threshold", id, got)
		}
	}
}

// TestUICapacity opens `svclab capacity --ui`'s page in a real browser:
// each step's rate and verdict appear as the search goes, the current
// step second by second, and at the end the steps are the -o file's.
func TestUICapacity(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	const specText = `
[app]
name = "chain"
hops = 2

[deploy]
transport = "grpc"

[load]
rate = 50

[experiment]
name = "cap"
`
	specPath := writeSpec(t, dir, "cap.toml", specText)
	out := filepath.Join(dir, "capacity.json")
	cmd, log := openUI(t, ctx, "capacity", "--ui", specPath, "--slo", "p99_ms=1000", "--start", "50", "--max-rate", "200",
		"--step", "2s", "--warmup", "500ms", "--cooldown", "200ms", "--max-steps", "3", "--confirm", "0", "-o", out)
	waitFor(t, 60*time.Second, "a step's seconds", func() bool { return number(text(t, ctx, "#cur-requests")) > 0 })
	if got := text(t, ctx, "#run-id"); got != "step 1" {
		t.Errorf("current run %q, want step 1", got)
	}
	waitFor(t, 60*time.Second, "the first step's verdict", func() bool { return text(t, ctx, "#steps td.verdict") != "" })
	waitFor(t, 90*time.Second, "the page to say the search ended", func() bool { return strings.HasPrefix(text(t, ctx, "#status"), "ended") })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("svclab capacity: %v\n%s", err, log)
	}
	screenshot(t, ctx, "ui-capacity.png")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Steps []struct {
			Rate float64 `json:"rate"`
			Pass bool    `json:"pass"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#steps tr")).map(r => r.querySelector(".rate").textContent + " " + r.querySelector(".verdict").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range f.Steps {
		v := "fail"
		if s.Pass {
			v = "pass"
		}
		want = append(want, strconv.FormatFloat(s.Rate, 'f', 1, 64)+" "+v)
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") || len(want) == 0 {
		t.Errorf("the page's steps %v, capacity.json's %v", got, want)
	}
	if n := len(rows(t, ctx)); n != len(want) {
		t.Errorf("%d steps in the runs table, want %d", n, len(want))
	}
}

// TestUIUp opens `svclab up --ui`'s page: the deployment's processes with
// their CPU and memory, its groups' replicas, the link to its Prometheus;
// on Ctrl-C the page says it ended.
func TestUIUp(t *testing.T) {
	ctx := browser(t)
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	const specText = `
[app]
name = "chain"
hops = 2

[deploy]
placement = "split"
metrics = true
`
	specPath := writeSpec(t, dir, "up.toml", specText)
	cmd, log := openUI(t, ctx, "up", "--ui", specPath)
	waitFor(t, 30*time.Second, "the processes", func() bool {
		procs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#processes tr").length`))
		return err == nil && procs >= 3
	})
	if got := text(t, ctx, "#processes"); !strings.Contains(got, "telemetrytelemetry.prometheus") {
		t.Errorf("processes %q, want the telemetry backend's", got)
	}
	if got := text(t, ctx, "#changes"); !strings.Contains(got, "replicas of hop1: 0 → 1") {
		t.Errorf("replicas %q, want hop1's", got)
	}
	if got := text(t, ctx, "#links"); !strings.HasPrefix(got, "Prometheus http://127.0.0.1:") {
		t.Errorf("links %q, want the deployment's Prometheus", got)
	}
	if err := cmd.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the page to say up ended", func() bool { return strings.HasPrefix(text(t, ctx, "#status"), "ended") })
	screenshot(t, ctx, "ui-up.png")
	if err := cmd.Wait(); err != nil {
		t.Logf("svclab up: %v\n%s", err, log)
	}
}

// thresholdStates reads the page's thresholds table: expression → state.
func thresholdStates(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll("#thresholds tr")).map(r => [r.querySelector(".expr").textContent, r.querySelector(".state").textContent])`))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r[0]] = r[1]
	}
	return out
}

// TestUIHopsAndThresholds opens `svclab run --ui`'s page during a run
// with deploy.tracing: the per-hop breakdown of the last seconds' traces
// appears with every hop of the chain, beside a link to the run's
// Jaeger; the thresholds are judged on the measurement so far while it
// goes, and at the end their states are the run's verdict, the broken
// thresholds of its run.json.
func TestUIHopsAndThresholds(t *testing.T) {
	ctx := browser(t)
	if _, err := os.Stat(deploy.JaegerPath()); err != nil {
		t.Skipf("no Jaeger (make jaeger): %v", err)
	}
	dir := t.TempDir()
	const specText = `
[app]
name = "chain"
hops = 3

[deploy]
transport = "grpc"
placement = "split"
tracing = 1.0

[load]
rate = 100
warmup = "1s"
duration = "12s"
[load.thresholds]
p50_ms = 0.000001
p99_ms = 10000
min_rps = 1

[experiment]
name = "hops"
`
	specPath := writeSpec(t, dir, "hops.toml", specText)
	cmd, log := openUI(t, ctx, "run", "--ui", "--no-report", "--results", filepath.Join(dir, "results"), specPath)
	waitFor(t, 60*time.Second, "the thresholds judged on the measurement so far", func() bool {
		return thresholdStates(t, ctx)["total: p50_ms <= 1e-06"] == "broken so far"
	})
	if got := thresholdStates(t, ctx); got["total: p99_ms <= 10000"] != "holds so far" || got["total: min_rps >= 1"] != "holds so far" {
		t.Errorf("thresholds during the run %v, want p99_ms and min_rps holding so far", got)
	}
	if got := text(t, ctx, "#thresholds-judged"); got != "on the measurement so far" {
		t.Errorf("thresholds judged %q during the run", got)
	}
	waitFor(t, 60*time.Second, "the per-hop breakdown", func() bool {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#hops tr").length`))
		return err == nil && n == 3
	})
	hops, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#hops tr")).map(r => r.dataset.hop + " " + r.querySelector(".calls").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"client→hop1", "hop1→hop2", "hop2→hop3"} {
		hop, calls, _ := strings.Cut(hops[i], " ")
		if hop != want || number(calls) <= 0 {
			t.Errorf("hop %d: %q, want %s with its calls", i, hops[i], want)
		}
	}
	if got := text(t, ctx, "#hops-section"); !strings.Contains(got, "the last 5 s of traces") {
		t.Errorf("hops section %q, want its window", got)
	}
	if got := text(t, ctx, "#links"); !strings.Contains(got, "Jaeger http://127.0.0.1:") {
		t.Errorf("links %q, want the run's Jaeger", got)
	}
	if href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("hops-jaeger").hidden ? "" : document.getElementById("hops-jaeger").href`)); err != nil || !strings.Contains(text(t, ctx, "#links"), strings.TrimSuffix(href, "/")) || href == "" {
		t.Errorf("the hops' link to Jaeger %q (%v), want the run's", href, err)
	}
	screenshot(t, ctx, "ui-hops.png")
	waitEnded(t, ctx, cmd, log, exitThresholds)
	if got := text(t, ctx, "#thresholds-judged"); got != "the run's verdict" {
		t.Errorf("thresholds judged %q at the end", got)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "results", "hops-*", "runs", "*", "run.json"))
	if len(m) != 1 {
		t.Fatalf("run.json: %v", m)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Thresholds []string `json:"thresholds"`
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	// run.json names each broken one "total: p50_ms 4.1 > 1e-06".
	var broken []string
	for expr, state := range thresholdStates(t, ctx) {
		if state == "broken" {
			broken = append(broken, expr)
		} else if state != "holds" {
			t.Errorf("threshold %s is %q at the end, want holds or broken", expr, state)
		}
	}
	if len(broken) != len(rf.Thresholds) {
		t.Errorf("the page's broken thresholds %v, run.json's %v", broken, rf.Thresholds)
	}
	for _, expr := range broken {
		op, rest, _ := strings.Cut(expr, ": ")
		metric, _, _ := strings.Cut(rest, " ")
		if !slices.ContainsFunc(rf.Thresholds, func(s string) bool { return strings.HasPrefix(s, op+": "+metric+" ") }) {
			t.Errorf("the page says %s is broken, run.json %v", expr, rf.Thresholds)
		}
	}
}

// TestUIResume: `svclab run --resume --ui` shows the experiment's plan
// and the runs it kept from before (in the runs table, counted in the
// progress) as soon as it resumes, before any run of its own ends.
func TestUIResume(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	// abort_on_fail stops the experiment after its first run, which
	// breaks the threshold; --resume does the second.
	const specText = `
[app]
name = "chain"
hops = 2

[deploy]
transport = "grpc"

[load]
rate = 50
warmup = "500ms"
duration = "4s"
[load.thresholds]
p50_ms = 0.000001
abort_on_fail = true

[experiment]
name = "resume"
order = "sequential"
seed = 1
[experiment.factors]
"deploy.placement" = ["monolith", "split"]
`
	specPath := writeSpec(t, dir, "resume.toml", specText)
	results := filepath.Join(dir, "results")
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, stderr, code := svclab(t, runCtx, nil, "run", "--no-report", "--results", results, specPath); code != exitThresholds {
		t.Fatalf("svclab run: exit %d, want %d (aborted on the broken threshold)\n%s", code, exitThresholds, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(results, "resume-*"))
	if len(m) != 1 {
		t.Fatalf("results: %v", m)
	}
	kept, _ := filepath.Glob(filepath.Join(m[0], "runs", "r*", "summary.json"))
	if len(kept) != 1 {
		t.Fatalf("%d runs committed before the resume, want 1", len(kept))
	}
	keptID := filepath.Base(filepath.Dir(kept[0]))
	cmd, log := openUI(t, ctx, "run", "--ui", "--no-report", "--resume", m[0], specPath)
	waitFor(t, 30*time.Second, "the resumed plan's progress", func() bool { return text(t, ctx, "#progress") == "1/2 runs" })
	if ids := rows(t, ctx); len(ids) != 1 || ids[0] != keptID {
		t.Errorf("runs table on resuming %v, want the kept %s", ids, keptID)
	}
	if got := text(t, ctx, "#design"); !strings.Contains(got, "2 runs") || !strings.Contains(got, "1 run kept from before") || !strings.Contains(got, "order sequential") {
		t.Errorf("header %q, want the plan's design and order and the kept run", got)
	}
	if got := text(t, ctx, fmt.Sprintf(`#runs tr[data-id=%q] td.run-status`, keptID)); got != "ok (kept from before)" {
		t.Errorf("kept run's status %q", got)
	}
	checkTotals(t, ctx, keptID, kept[0])
	waitEnded(t, ctx, cmd, log, exitThresholds)
	if got := text(t, ctx, "#progress"); got != "2/2 runs" {
		t.Errorf("progress %q at the end, want 2/2 runs", got)
	}
	screenshot(t, ctx, "ui-resume.png")
}
