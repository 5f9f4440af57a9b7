// Package telemetry runs a deployment's telemetry programs on this
// machine: a Jaeger for deploy.tracing, to which the hosts (and Envoy
// sidecars) export their spans, and a Prometheus for deploy.metrics, which
// scrapes every host's metrics listener (or, for the exec app's programs,
// which have none, their Envoy sidecars' stats). They stand for a mesh's
// telemetry services, which a real cluster runs on machines of their own.
//
// A deployer starts them (Start, then StartMetrics once it has bound the
// hosts' metrics listeners), points Prometheus at its live replicas
// whenever they change (SetTargets), and stops them after its hosts
// (BeforeStop, then Stop), which reads what they received: Spans and
// Series. Processes lists them with role telemetry, so that their CPU and
// memory are sampled apart from the system's.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/procgroup"
)

// Config says what telemetry a deployment has and where its programs run.
type Config struct {
	// ID is the deployment's, for messages and the cgroup's name.
	ID string
	// Dir is the deployment's private directory: configurations, logs
	// and Prometheus's data go under it.
	Dir string
	// Tracing is deploy.tracing, the ratio of requests traced; 0 starts
	// no Jaeger.
	Tracing float64
	// JaegerPath is the Jaeger binary (deploy.JaegerPath).
	JaegerPath string
	// CPUs is deploy.Options.TelemetryCPUs: the CPUs the programs are
	// moved onto, in a cgroup of their own; empty leaves them where they
	// start.
	CPUs string
	// DeploymentCPUs is deploy.Options.CPUs, where the programs run when
	// CPUs is empty, for the limits Processes reports.
	DeploymentCPUs string
	// Spawn runs start on the thread that forks the deployment's
	// children, so that the programs' parent-death signal lasts as long
	// as the deployment (nil: the caller's thread).
	Spawn func(start func())
	// Proc reads the programs' resource counters.
	Proc *procstat.Reader
	// Series names a few of the series the targets serve, for Lines;
	// empty for the hosts' (svclab_requests_total, ...).
	Series string
}

// Target is one host's metrics listener, for Prometheus to scrape.
type Target struct {
	// Addr is the listener's host:port.
	Addr string
	// Process names the replica (`hop2#1`): the label `process` of every
	// series scraped from it.
	Process string
	// Path is where the listener serves its metrics, empty for /metrics;
	// Params are the query parameters of every scrape (an Envoy admin
	// API's filter, which keeps a scrape to the series kept).
	Path   string
	Params map[string]string
	// Labels are set on every series scraped from it, beside process.
	Labels map[string]string
}

// Telemetry is a deployment's running telemetry programs. A nil
// *Telemetry has none: its methods do nothing, and Spans and Series
// say so.
type Telemetry struct {
	cfg        Config
	group      cpuGroup
	jaeger     *jaeger
	prometheus *prometheus

	// proxies are the services (proxy names) under which sidecars that
	// emit their own spans report them; apps those under which proxies
	// report spans that stand for their apps' (TraceApp).
	mu      sync.Mutex
	proxies []string
	apps    []string

	// collected is closed once spans and series are read (Stop).
	collected chan struct{}
	spans     []deploy.Span
	spansErr  error
	series    []deploy.Sample
	seriesErr error
}

// Start starts Jaeger when cfg asks for tracing, and waits until it is
// ready or ctx ends. Prometheus starts later (StartMetrics), once the
// hosts' metrics listeners exist. On error the caller's Stop cleans up.
func Start(ctx context.Context, cfg Config) (*Telemetry, error) {
	if cfg.Spawn == nil {
		cfg.Spawn = func(start func()) { start() }
	}
	t := &Telemetry{cfg: cfg, group: cpuGroup{cpus: cfg.CPUs}, collected: make(chan struct{})}
	if cfg.Tracing > 0 {
		j, err := t.startJaeger(ctx)
		if err != nil {
			return t, fmt.Errorf("deployment %s: deploy.tracing: %w", cfg.ID, err)
		}
		t.jaeger = j
	}
	return t, nil
}

// StartMetrics starts Prometheus scraping targets every ScrapeInterval,
// and waits until it is ready or ctx ends.
func (t *Telemetry) StartMetrics(ctx context.Context, targets []Target) error {
	p, err := t.startPrometheus(ctx, targets)
	if err != nil {
		return fmt.Errorf("deployment %s: deploy.metrics: %w", t.cfg.ID, err)
	}
	t.prometheus = p
	return nil
}

// Tracing reports whether Jaeger runs.
func (t *Telemetry) Tracing() bool { return t != nil && t.jaeger != nil }

// Metrics reports whether Prometheus runs.
func (t *Telemetry) Metrics() bool { return t != nil && t.prometheus != nil }

// OTLP is where hosts export their spans (OTLP/gRPC host:port), and the
// ratio they trace; "" without tracing.
func (t *Telemetry) OTLP() (addr string, ratio float64) {
	if !t.Tracing() {
		return "", 0
	}
	return t.jaeger.otlp, t.cfg.Tracing
}

// TraceProxy makes proxy c of kind k emit its own spans into Jaeger, with
// the hosts' ratio, as Istio's observability setup has Envoy do. Only a
// program that can (Envoy) does, and only at layer 7: a TCP proxy sees no
// requests.
func (t *Telemetry) TraceProxy(k sidecar.Kind, c *sidecar.Config) {
	if !t.Tracing() || k.Name() != "envoy" || c.Protocol == sidecar.TCP {
		return
	}
	c.Tracing = &sidecar.Tracing{OTLP: t.jaeger.otlp, Ratio: t.cfg.Tracing}
	t.mu.Lock()
	t.proxies = append(t.proxies, c.Name)
	t.mu.Unlock()
}

// TraceApp makes proxy c of kind k emit spans that stand for those of
// the app behind it, under service: the exec app's programs emit none of
// their own, so their proxies' are theirs, as Istio's are for an app that
// is not instrumented. The spans carry their listeners' components as
// the hosts' spans do (sidecar.Tracing.Components), and Spans reads them
// as an app's, not a proxy's. As TraceProxy, only Envoy does, and only at
// layer 7.
func (t *Telemetry) TraceApp(k sidecar.Kind, c *sidecar.Config, service string) {
	if !t.Tracing() || k.Name() != "envoy" || c.Protocol == sidecar.TCP {
		return
	}
	c.Tracing = &sidecar.Tracing{OTLP: t.jaeger.otlp, Ratio: t.cfg.Tracing, Service: service, Components: true}
	t.mu.Lock()
	if !slices.Contains(t.apps, service) {
		t.apps = append(t.apps, service)
	}
	t.mu.Unlock()
}

// AwaitScraping waits, once every host is ready, until Prometheus has
// scraped every target once, or ctx ends: Prometheus hands its scrapers
// their targets some seconds after it starts, and a run must not begin
// before its metrics are recorded.
func (t *Telemetry) AwaitScraping(ctx context.Context) error {
	if !t.Metrics() {
		return nil
	}
	if err := t.prometheus.scraping(ctx); err != nil {
		return fmt.Errorf("deployment %s: deploy.metrics: %w", t.cfg.ID, err)
	}
	return nil
}

// SetTargets points Prometheus at targets, the live replicas' metrics
// listeners.
func (t *Telemetry) SetTargets(targets []Target) error {
	if !t.Metrics() {
		return nil
	}
	return t.prometheus.writeTargets(targets)
}

// BeforeStop lets the programs catch up with the hosts' last calls before
// the hosts stop: Prometheus scrapes every host once more, and Envoy
// proxies, which do not flush their spans when they exit, export what they
// hold.
func (t *Telemetry) BeforeStop(ctx context.Context) {
	if t == nil {
		return
	}
	if t.prometheus != nil {
		t.prometheus.finalScrape(ctx)
	}
	t.mu.Lock()
	proxies := len(t.proxies) + len(t.apps)
	t.mu.Unlock()
	if proxies == 0 {
		return
	}
	wait := time.NewTimer(2*sidecar.EnvoyFlushInterval + 100*time.Millisecond)
	defer wait.Stop()
	select {
	case <-wait.C:
	case <-ctx.Done():
	}
}

// Stop reads what the programs received, once every host has stopped (and
// so exported its last spans and served its last scrape), then stops them
// and removes their cgroup. services are the deployment's groups, under
// which the hosts report their spans (those TraceApp named are read too).
func (t *Telemetry) Stop(ctx context.Context, services []string) error {
	if t == nil {
		return nil
	}
	select {
	case <-t.collected:
		return nil
	default:
	}
	defer close(t.collected)
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if t.prometheus != nil {
		t.series, t.seriesErr = t.prometheus.series(qctx)
		t.prometheus.stop()
	}
	if t.jaeger != nil {
		t.mu.Lock()
		proxies := slices.Clone(t.proxies)
		services = append(slices.Clone(services), t.apps...)
		t.mu.Unlock()
		t.spans, t.spansErr = t.jaeger.settledSpans(qctx, append(services, proxies...))
		for i := range t.spans {
			t.spans[i].Proxy = slices.Contains(proxies, t.spans[i].Service)
		}
		t.jaeger.stop()
	}
	return t.group.remove()
}

// Spans returns every span Jaeger received (a deploy.TraceSource's),
// once Stop has read them.
func (t *Telemetry) Spans() ([]deploy.Span, error) {
	if !t.Tracing() {
		return nil, ErrNoTracing
	}
	if err := t.stopped("spans"); err != nil {
		return nil, err
	}
	return t.spans, t.spansErr
}

// Series returns every sample Prometheus scraped (a deploy.MetricSource's),
// once Stop has read them.
func (t *Telemetry) Series() ([]deploy.Sample, error) {
	if !t.Metrics() {
		return nil, ErrNoMetrics
	}
	if err := t.stopped("series"); err != nil {
		return nil, err
	}
	return t.series, t.seriesErr
}

func (t *Telemetry) stopped(what string) error {
	select {
	case <-t.collected:
		return nil
	default:
		return fmt.Errorf("deployment %s: %s are read when it has stopped", t.cfg.ID, what)
	}
}

// ErrNoTracing is Spans of a deployment without deploy.tracing.
var ErrNoTracing = errors.New("the deployment has no tracing (deploy.tracing = 0)")

// ErrNoMetrics is Series of a deployment without deploy.metrics.
var ErrNoMetrics = errors.New("the deployment has no metrics (deploy.metrics = false)")

// Processes lists the programs that are running, as processes named
// telemetry.<program> of role telemetry (a deploy.TelemetrySource's). Their
// CPU list is the telemetry group's, or the deployment's where they
// stayed with the hosts.
func (t *Telemetry) Processes() []deploy.TelemetryProcess {
	if t == nil {
		return nil
	}
	var out []deploy.TelemetryProcess
	add := func(name, url string, cmd *exec.Cmd, done <-chan struct{}) {
		if cmd == nil || cmd.Process == nil {
			return
		}
		select {
		case <-done:
			return
		default:
		}
		info := deploy.ProcessInfo{Name: "telemetry." + name, Role: deploy.RoleTelemetry, PID: cmd.Process.Pid}
		cpus := t.group.cpus
		if cpus == "" {
			cpus = t.cfg.DeploymentCPUs
		}
		if cpus != "" {
			info.Limits = &cgroup.Limits{CPUs: cpus}
		}
		out = append(out, deploy.TelemetryProcess{Info: info, Source: t.cfg.Proc.Process(info.PID), URL: url})
	}
	if t.jaeger != nil {
		add("jaeger", t.jaeger.query, t.jaeger.cmd, t.jaeger.done)
	}
	if t.prometheus != nil {
		add("prometheus", t.prometheus.web, t.prometheus.cmd, t.prometheus.done)
	}
	return out
}

// Lines say where the telemetry can be seen, for `svclab up`.
func (t *Telemetry) Lines() []string {
	var out []string
	if t.Tracing() {
		out = append(out, fmt.Sprintf("tracing: %g%% of requests, Jaeger UI at %s", 100*t.cfg.Tracing, t.jaeger.query))
	}
	if t.Metrics() {
		series := t.cfg.Series
		if series == "" {
			series = "svclab_requests_total, svclab_request_duration_seconds, ..."
		}
		out = append(out, fmt.Sprintf("metrics: Prometheus at %s (%s)", t.prometheus.web, series))
	}
	return out
}

// startProgram starts cmd, a telemetry program, with its output in
// logPath, in a process group that dies with svclab, and waits until ready
// says it serves or ctx ends. what names it in errors ("Jaeger").
// It returns the Leader that signals its group (its exit ends what it
// left there, if anything) and done, closed once it has exited and been
// reaped; on error nothing is left running and the error carries its log.
func (t *Telemetry) startProgram(ctx context.Context, what string, cmd *exec.Cmd, logPath string, ready func(context.Context) bool) (_ *procgroup.Leader, done chan struct{}, err error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	defer logf.Close() // the child holds its own copy
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var startErr error
	t.cfg.Spawn(func() { startErr = cmd.Start() })
	if startErr != nil {
		return nil, nil, fmt.Errorf("%s: start %s: %w", what, programName(cmd), startErr)
	}
	leader := procgroup.New(cmd)
	leader.EndGroup()
	done = make(chan struct{})
	go func() { _ = leader.Wait(); close(done) }()
	if err := t.group.add(t.cfg.ID, cmd.Process.Pid); err != nil {
		stopGroup(leader, done)
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ready(ctx) {
		select {
		case <-done:
			return nil, nil, fmt.Errorf("%s %s exited at start (%s); its log:\n%s", what, programName(cmd), cmd.ProcessState, logTail(logPath))
		case <-ctx.Done():
			stopGroup(leader, done)
			return nil, nil, fmt.Errorf("%s %s not ready: %w; its log:\n%s", what, programName(cmd), context.Cause(ctx), logTail(logPath))
		case <-tick.C:
		}
	}
	return leader, done, nil
}

// cpuGroup is the control group of a deployment's telemetry programs
// under deploy.telemetry_cpus = "generator" (Config.CPUs): the load
// generator's CPUs and no limit. A program starts on the system under
// test's CPUs, as everything a deployment starts does
// (experiment.Isolation.AsSUT), and is moved, every thread of it, before
// it serves: Jaeger and Prometheus do not fork.
type cpuGroup struct {
	cpus string // empty: the programs stay where they start
	mu   sync.Mutex
	g    *cgroup.Group
}

// add moves process pid into the group, which it makes on first use.
func (c *cpuGroup) add(id string, pid int) error {
	if c.cpus == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.g == nil {
		m, err := cgroup.Open()
		if err != nil {
			return fmt.Errorf("deploy.telemetry_cpus needs a cgroup (cpus %q): %w", c.cpus, err)
		}
		if c.g, err = m.New(id+"-telemetry", cgroup.Limits{CPUs: c.cpus}); err != nil {
			return fmt.Errorf("deploy.telemetry_cpus: %w", err)
		}
	}
	if err := c.g.Add(pid); err != nil {
		return fmt.Errorf("deploy.telemetry_cpus: move pid %d onto CPU %s: %w", pid, c.cpus, err)
	}
	return nil
}

// remove deletes the group once its programs have exited.
func (c *cpuGroup) remove() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.g == nil {
		return nil
	}
	err := c.g.Remove()
	c.g = nil
	return err
}
