package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/svclab/svclab/internal/capacity"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/live"
	"github.com/svclab/svclab/internal/load"
)

// uiOptions are --ui [ADDR] and --ui-allow-remote, which `svclab run`,
// `up`, `load` and `capacity` share: a live view of the work
// (internal/live, docs/LIVE.md).
type uiOptions struct {
	addr        string
	allowRemote bool
}

func (o *uiOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.addr, "ui", "", "serve a live view of the work, and its series at /metrics: --ui on 127.0.0.1 at a free port, --ui=ADDR elsewhere (docs/LIVE.md)")
	f.Lookup("ui").NoOptDefVal = live.DefaultAddr
	f.BoolVar(&o.allowRemote, "ui-allow-remote", false, "let --ui listen on an address that is not loopback")
}

// given says --ui was.
func (o *uiOptions) given() bool { return o.addr != "" || o.allowRemote }

// uiView is a running live view; its zero value (no --ui) is one that
// shows nothing, whose board ignores what it is given.
type uiView struct {
	board *live.Board
	srv   *live.Server
	// stopSampling ends the sampling of svclab's own resources.
	stopSampling context.CancelFunc

	mu     sync.Mutex
	steps  int  // capacity steps begun
	inStep bool // a step's seconds came and its verdict has not
	// th and tally judge a load run's thresholds on its measurement so
	// far, second by second (judgeSecond).
	th    *load.Thresholds
	tally *load.Tally
}

// start serves the view when --ui was given and prints its URL first, on
// w. The view stops with stop.
func (o *uiOptions) start(w io.Writer, e live.Experiment) (*uiView, error) {
	if !o.given() {
		return &uiView{}, nil
	}
	b := live.NewBoard()
	srv, err := live.Listen(o.addr, o.allowRemote, b)
	if err != nil {
		return nil, usageError{fmt.Errorf("--ui: %w", err)}
	}
	fmt.Fprintf(w, "live view: %s (metrics: %smetrics)\n", srv.URL(), srv.URL())
	b.Experiment(e)
	return &uiView{board: b, srv: srv}, nil
}

// stop says the work ended (with err, if it failed) and stops the server
// once each open page has been told.
func (v *uiView) stop(err error) {
	if v == nil || v.srv == nil {
		return
	}
	v.board.End(err)
	_ = v.srv.Close()
}

// progress feeds the board each second the load generator reports, and
// passes it on to next (the progress line) when there is one.
func (v *uiView) progress(next func(load.Progress)) func(load.Progress) {
	if v == nil || v.board == nil {
		return next
	}
	return func(p load.Progress) {
		v.board.Second(secondOf(p))
		v.judgeSecond(p)
		if next != nil {
			next(p)
		}
	}
}

// judgeSecond judges the load run's thresholds on its measurement so
// far, p included, as its result will be judged (load.Thresholds.States).
func (v *uiView) judgeSecond(p load.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.th == nil || p.Warmup {
		return
	}
	v.tally.Add(p)
	v.board.Thresholds(thresholdsOf(v.th.States(v.tally.Summary(), false)), false)
}

// secondOf is a generator's second as the live view takes it.
func secondOf(p load.Progress) live.Second {
	return live.Second{Elapsed: p.Elapsed, Warmup: p.Warmup, Requests: p.Requests, Errors: p.Errors, RPS: p.RPS,
		ErrorClasses: p.ErrorClasses, Latency: p.Latency, P50: p.P50, P99: p.P99,
		LagP99: p.LagP99, LagMax: p.LagMax, LateSends: p.LateSends, Dropped: p.Dropped}
}

// thresholdsOf is the thresholds' states as the live view shows them.
func thresholdsOf(states []load.ThresholdState) []live.Threshold {
	out := make([]live.Threshold, len(states))
	for i, s := range states {
		out[i] = live.Threshold{Expr: s.String(), State: s.State}
	}
	return out
}

// loadExperiment is `svclab load`'s header: one run against its target.
func loadExperiment(cfg load.Config) live.Experiment {
	return live.Experiment{Command: "load", Name: cfg.Target, Duration: time.Duration(cfg.Duration), Warmup: time.Duration(cfg.Warmup)}
}

// loadStarted begins the view of one load run, `svclab load`'s.
func (v *uiView) loadStarted(cfg load.Config) {
	if v == nil || v.board == nil {
		return
	}
	v.board.RunStarted(live.Run{ID: "load", Index: 1, Levels: map[string]string{"target": cfg.Target}})
	v.mu.Lock()
	v.th, v.tally = cfg.Thresholds, load.NewTally()
	v.mu.Unlock()
	v.board.Thresholds(thresholdsOf(cfg.Thresholds.States(load.Summary{}, false)), false)
	ctx, cancel := context.WithCancel(context.Background())
	v.stopSampling = cancel
	go v.sampleSelf(ctx)
}

// sampleSelf shows the CPU and memory of svclab load and its children
// (the generators of load.generators, the host timer's sentinel), once a
// second, until ctx ends.
func (v *uiView) sampleSelf(ctx context.Context) {
	r, err := procstat.Open()
	if err != nil {
		return
	}
	src := r.Tree(os.Getpid())
	rates := cpuRates{}
	eachSecond(ctx, func(now time.Time) {
		if u, err := src.Sample(ctx); err == nil {
			v.board.Resources([]live.Process{{Role: deploy.RoleLoadGen, Name: "svclab load",
				CPU: rates.cores("self", now, u.CPUSeconds), Memory: u.RSSBytes}})
		}
	})
}

// eachSecond calls f once a second until ctx ends.
func eachSecond(ctx context.Context, f func(now time.Time)) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			f(now)
		}
	}
}

// cpuRates turns each process's CPU seconds so far into the cores it used
// since its last sample.
type cpuRates map[string]cpuSample

type cpuSample struct {
	at    time.Time
	cpu   float64
	cores float64 // the rate shown at this sample
}

// minRateSpan is the shortest span a rate is read over: the run's sampler
// also samples as the measurement ends, often a few milliseconds after a
// tick, and /proc counts CPU in 10 ms ticks, so a rate over so short a span
// would show a spike or a drop that no process had.
const minRateSpan = 200 * time.Millisecond

func (r cpuRates) cores(key string, at time.Time, cpu float64) float64 {
	last, ok := r[key]
	if ok && at.After(last.at) && at.Sub(last.at) < minRateSpan {
		return last.cores
	}
	if !ok || !at.After(last.at) {
		r[key] = cpuSample{at: at, cpu: cpu}
		return 0
	}
	c := max(0, (cpu-last.cpu)/at.Sub(last.at).Seconds())
	r[key] = cpuSample{at: at, cpu: cpu, cores: c}
	return c
}

// loadFinished ends the view of a load run with its result.
func (v *uiView) loadFinished(id string, res *load.Result, runErr error, t *load.Thresholds) {
	if v == nil || v.board == nil {
		return
	}
	if v.stopSampling != nil {
		v.stopSampling()
	}
	r := live.Result{ID: id, Status: "ok"}
	if runErr != nil {
		r.Status, r.Reason = "failed", runErr.Error()
	}
	if res != nil {
		if tot, ok := res.Op("total"); ok {
			r.RPS = tot.RPS
		}
		for _, w := range res.Warnings {
			r.Warnings = append(r.Warnings, w.Text)
		}
		for _, b := range t.Check(res.Summary) {
			r.Thresholds = append(r.Thresholds, b.String())
		}
		v.board.Thresholds(thresholdsOf(t.States(res.Summary, true)), true)
	}
	v.board.RunFinished(r)
}

// watchDeployment shows d's processes' CPU and memory, and each group's
// replicas as they change, once a second until ctx ends: `svclab up`'s
// view, where no run's events come.
func (v *uiView) watchDeployment(ctx context.Context, d deploy.Deployment) {
	if v == nil || v.board == nil {
		return
	}
	rates := cpuRates{}
	replicas := map[string]int{}
	eachSecond(ctx, func(now time.Time) {
		var ps []live.Process
		count := map[string]int{}
		sample := func(info deploy.ProcessInfo, src deploy.ResourceSource) {
			u, err := src.Sample(ctx)
			if err != nil {
				return
			}
			key := fmt.Sprintf("%s/%d", info.Name, info.PID)
			ps = append(ps, live.Process{Role: info.Role, Name: info.Name, CPU: rates.cores(key, now, u.CPUSeconds), Memory: u.RSSBytes})
		}
		for _, p := range d.Processes() {
			info := p.Info()
			if info.Role == deploy.RoleHost {
				count[info.Group]++
			}
			sample(info, p.Resources())
		}
		if bs := d.Capabilities().Telemetry; bs != nil {
			for _, b := range bs.TelemetryProcesses() {
				sample(b.Info, b.Source)
			}
		}
		v.board.Resources(ps)
		for _, g := range slices.Sorted(maps.Keys(count)) {
			if n := count[g]; n != replicas[g] {
				v.board.Scaled(live.Scale{Group: g, From: replicas[g], To: n})
				replicas[g] = n
			}
		}
	})
}

// upStarted begins `svclab up`'s view of deployment d, which lasts until
// ctx ends.
func (v *uiView) upStarted(ctx context.Context, d deploy.Deployment) {
	if v == nil || v.board == nil {
		return
	}
	v.board.RunStarted(live.Run{ID: "up", Index: 1})
	v.board.Phase("up")
	v.board.Links(linksOf(d))
	go v.watchDeployment(ctx, d)
}

// stepProgress feeds the board the seconds of each capacity step, a run
// of the view's named for its rate, and passes them on to next.
func (v *uiView) stepProgress(next func(float64, load.Progress)) func(float64, load.Progress) {
	if v == nil || v.board == nil {
		return next
	}
	return func(rate float64, p load.Progress) {
		v.mu.Lock()
		if !v.inStep {
			v.steps++
			v.inStep = true
			v.board.RunStarted(live.Run{ID: fmt.Sprintf("step %d", v.steps), Index: v.steps,
				Levels: map[string]string{"rate": strconv.FormatFloat(rate, 'f', -1, 64) + "/s"}})
		}
		v.mu.Unlock()
		v.board.Second(secondOf(p))
		if next != nil {
			next(rate, p)
		}
	}
}

// capacityStep shows a finished step of the search and its verdict.
func (v *uiView) capacityStep(s capacity.Step) {
	if v == nil || v.board == nil {
		return
	}
	verdict, why := "pass", ""
	switch {
	case s.Inconclusive != "":
		verdict, why = "inconclusive", s.Generator+"; "+s.Inconclusive
	case !s.Pass:
		verdict, why = "fail", strings.Join(s.Breaches, "; ")
	}
	v.board.CapacityStep(live.Step{Rate: s.Rate, Verdict: verdict, Reason: why, P99Ms: s.Latency.P99Ms})
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.inStep {
		v.inStep = false
		r := live.Result{ID: fmt.Sprintf("step %d", v.steps), Status: verdict, Reason: why, RPS: s.SentRPS}
		if s.Generator != "" {
			r.Warnings = []string{"generator_bottleneck: " + s.Generator}
		}
		v.board.RunFinished(r)
	}
}

// linksOf is where d's telemetry backends can be opened.
func linksOf(d deploy.Deployment) live.Links {
	var l live.Links
	if bs := d.Capabilities().Telemetry; bs != nil {
		for _, b := range bs.TelemetryProcesses() {
			switch b.Info.Name {
			case "telemetry.jaeger":
				l.Jaeger = b.URL
			case "telemetry.prometheus":
				l.Prometheus = b.URL
			}
		}
	}
	return l
}
