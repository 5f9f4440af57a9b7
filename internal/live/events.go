package live

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Experiment is the work's header: what runs, in which order, and how long
// it should take.
type Experiment struct {
	// Command is the svclab command at work: run, up, load or capacity.
	Command string `json:"command"`
	Name    string `json:"name"`
	// Design names the experimental design ("full factorial, 2 factors").
	Design string `json:"design,omitempty"`
	Order  string `json:"order,omitempty"`
	Seed   int64  `json:"seed,omitempty"`
	// Runs is the plan, in order.
	Runs []Run `json:"runs,omitempty"`
	// Estimate is the plan's estimate of the whole.
	Estimate time.Duration `json:"estimate_ns,omitempty"`
	// Duration and Warmup are one run's measurement and warm-up.
	Duration time.Duration `json:"duration_ns,omitempty"`
	Warmup   time.Duration `json:"warmup_ns,omitempty"`
	// Kept counts the runs of the plan done before this command began
	// (--resume), which Board.Kept gives.
	Kept int `json:"kept,omitempty"`
}

// Run is one planned run.
type Run struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
	// Levels are its factors' values, as text.
	Levels map[string]string `json:"levels,omitempty"`
}

// Second is one second of the current run's load, summed over every
// generator.
type Second struct {
	// Elapsed is the time since the measurement began; negative in
	// warm-up.
	Elapsed time.Duration
	Warmup  bool
	// Requests, Errors and RPS are this second's.
	Requests, Errors int64
	RPS              float64
	// ErrorClasses counts the measurement's errors so far by class.
	ErrorClasses map[string]int64
	// Latency is this second's latency histogram in µs (every generator's
	// merged); nil in warm-up.
	Latency *hdr.Histogram
	// P50 and P99 stand in for the histogram when there is none (warm-up).
	P50, P99 time.Duration
	// LagP99 and LagMax are the generator's send lag over the measurement
	// so far; LateSends and Dropped count its late and dropped sends.
	LagP99, LagMax     time.Duration
	LateSends, Dropped int64
}

// Process is one process's resources at a moment.
type Process struct {
	// Role is what it is, as deploy names it: host, sidecar, node-proxy,
	// telemetry, loadgen.
	Role string `json:"role"`
	Name string `json:"name"`
	// CPU is in cores (1 = one core busy); Memory in bytes (RSS).
	CPU    float64 `json:"cpu"`
	Memory int64   `json:"memory"`
}

// Scale is a change of a group's replicas, the autoscaler's or a plan's.
type Scale struct {
	Group  string `json:"group"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason,omitempty"`
}

// Fault is the window of a fault of [deploy.faults], once it is over.
type Fault struct {
	Kind     string    `json:"kind"`
	Target   string    `json:"target"`
	From, To time.Time `json:"-"`
}

// Links are the run's telemetry backends, as URLs a browser opens.
type Links struct {
	Jaeger     string `json:"jaeger,omitempty"`
	Prometheus string `json:"prometheus,omitempty"`
}

// Threshold is one of [load.thresholds] and its state: holds or broken
// (on the measurement so far until the run's verdict), or pending while
// there is nothing to judge it on.
type Threshold struct {
	Expr  string `json:"expr"`
	State string `json:"state"`
}

// Hops is the per-hop breakdown of the current run's last seconds of
// traces (deploy.tracing).
type Hops struct {
	// Window is how many seconds of traces it covers; Traces how many
	// traces they hold.
	Window float64 `json:"window_s"`
	Traces int     `json:"traces"`
	Hops   []Hop   `json:"hops"`
}

// Hop is one hop of the breakdown: caller→component, its calls, the
// server span's p50 and p99, the component's own work's, the wire's p50,
// and its own work and wire as a share of the requests' time (0 to 1).
type Hop struct {
	Hop         string  `json:"hop"`
	Calls       int     `json:"calls"`
	ServerP50Ms float64 `json:"server_p50_ms"`
	ServerP99Ms float64 `json:"server_p99_ms"`
	SelfP50Ms   float64 `json:"self_p50_ms"`
	SelfP99Ms   float64 `json:"self_p99_ms"`
	WireP50Ms   float64 `json:"wire_p50_ms"`
	Share       float64 `json:"share"`
}

// Result is a finished run.
type Result struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// RPS is the measurement's rate as the result has it.
	RPS float64 `json:"rps"`
	// Warnings are the audit's flags (generator_bottleneck, saturated,
	// ...), each "kind: text"; Thresholds the ones it broke.
	Warnings   []string `json:"warnings,omitempty"`
	Thresholds []string `json:"thresholds,omitempty"`
}

// Step is one step of a capacity search.
type Step struct {
	Rate    float64 `json:"rate"`
	Verdict string  `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
	P99Ms   float64 `json:"p99_ms,omitempty"`
}
