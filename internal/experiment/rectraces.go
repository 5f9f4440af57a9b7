package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"gonum.org/v1/gonum/stat"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/jaegerapi"
	"github.com/svclab/svclab/internal/runtime/middleware/tracing"
	"github.com/svclab/svclab/internal/warn"
)

// traceRecorder reads the spans of a run with deploy.tracing
// (deploy.Capabilities.Traces) once the deployment has stopped, writes
// the per-hop breakdown as hops.parquet and its check in run.json's
// traces; what the check finds wrong, or a failure to read the spans, is
// a warning.
type traceRecorder struct {
	traces deploy.TraceSource
	ratio  float64
	sent   *callCounter
	file   *RunFile
	// watching ends when the live breakdown (watch) has.
	watching chan struct{}
}

func newTraceRecorder(rec *Recording) Recorder {
	src, ratio := rec.Deployment.Capabilities().Traces, rec.Prepared.Runtime.Mesh.Tracing
	if src == nil || ratio <= 0 {
		return nil
	}
	return &traceRecorder{traces: src, ratio: ratio, sent: rec.sent, file: rec.File}
}

// Start reads the last seconds' traces while the load runs when someone
// watches the run's stream and its Jaeger has a query API (watch).
func (r *traceRecorder) Start(ctx context.Context, rec *Recording) error {
	jaeger := ""
	if bs := rec.Deployment.Capabilities().Telemetry; bs != nil && rec.Events != nil {
		for _, b := range bs.TelemetryProcesses() {
			if b.Info.Name == "telemetry.jaeger" {
				jaeger = b.URL
			}
		}
	}
	if jaeger == "" {
		return nil
	}
	r.watching = make(chan struct{})
	go func() {
		defer close(r.watching)
		r.watch(ctx, jaeger, rec.Run, rec.Events)
	}()
	return nil
}

func (r *traceRecorder) Finish(end *Ended) ([]warn.Warning, error) {
	if r.watching != nil {
		<-r.watching // its context ended with the measurement
	}
	check, err := r.write(end.Dir)
	if err != nil {
		return []warn.Warning{warn.Newf(warn.Traces, "%v", err)}, nil
	}
	r.file.Traces = check
	return check.Problems(), nil
}

// write analyses the spans and writes hops.parquet into dir.
func (r *traceRecorder) write(dir string) (*TraceCheck, error) {
	spans, err := r.traces.Spans()
	if err != nil {
		return nil, err
	}
	check, rows := AnalyzeTraces(spans, r.sent.total(), r.ratio)
	if err := parquet.WriteFile(filepath.Join(dir, TracesFile), rows); err != nil {
		return nil, fmt.Errorf("write %s: %w", TracesFile, err)
	}
	return &check, nil
}

// HopStat is one hop of a per-hop breakdown (HopWindow): over the traced
// requests' server spans on it (AnalyzeTraces's rows, which
// hops.parquet holds), the component's time and the wire's.
type HopStat struct {
	// Hop is "caller→component"; Depth its depth (0 at the entry).
	Hop   string `json:"hop"`
	Depth int32  `json:"depth"`
	Calls int    `json:"calls"`
	// ServerP50Ms and ServerP99Ms are the server span's duration: the
	// component's time with what it called; SelfP50Ms and SelfP99Ms its
	// own work; WireP50Ms what its caller saw beyond it (0 at the entry).
	ServerP50Ms float64 `json:"server_p50_ms"`
	ServerP99Ms float64 `json:"server_p99_ms"`
	SelfP50Ms   float64 `json:"self_p50_ms"`
	SelfP99Ms   float64 `json:"self_p99_ms"`
	WireP50Ms   float64 `json:"wire_p50_ms"`
	// Share is the hop's own work and wire as a share of the traced
	// requests' time at the entry, 0 to 1.
	Share  float64 `json:"share"`
	Errors int     `json:"errors"`
}

// HopStats sums rows by hop, in depth then hop order.
func HopStats(rows []HopRow) []HopStat {
	type acc struct {
		stat               HopStat
		server, self, wire []float64
		own                float64
	}
	byHop := map[string]*acc{}
	var entry float64
	for _, r := range rows {
		a := byHop[r.Hop]
		if a == nil {
			a = &acc{stat: HopStat{Hop: r.Hop, Depth: r.Depth}}
			byHop[r.Hop] = a
		}
		a.stat.Depth = min(a.stat.Depth, r.Depth)
		a.stat.Calls++
		if r.Error {
			a.stat.Errors++
		}
		a.server = append(a.server, r.ServerUS)
		a.self = append(a.self, max(0, r.SelfUS))
		a.wire = append(a.wire, max(0, r.WireUS))
		a.own += max(0, r.SelfUS) + max(0, r.WireUS)
		if r.Depth == 0 {
			entry += r.ServerUS
		}
	}
	out := make([]HopStat, 0, len(byHop))
	for _, a := range byHop {
		s := a.stat
		s.ServerP50Ms, s.ServerP99Ms = quantileMs(a.server, 0.5), quantileMs(a.server, 0.99)
		s.SelfP50Ms, s.SelfP99Ms = quantileMs(a.self, 0.5), quantileMs(a.self, 0.99)
		s.WireP50Ms = quantileMs(a.wire, 0.5)
		if entry > 0 {
			s.Share = a.own / entry
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b HopStat) int {
		if a.Depth != b.Depth {
			return int(a.Depth - b.Depth)
		}
		return strings.Compare(a.Hop, b.Hop)
	})
	return out
}

// quantileMs is the q-quantile of µs values, in ms: the smallest value
// with at least a share q of them at or below it (stat.Empirical).
func quantileMs(us []float64, q float64) float64 {
	if len(us) == 0 {
		return 0
	}
	slices.Sort(us)
	return stat.Quantile(q, stat.Empirical, us, nil) / 1e3
}

// Live breakdown: while the load runs, and only when someone watches the
// run's stream (a live view), the trace recorder reads the traces of the
// last hopWindow from the run's Jaeger every hopEvery, at most hopTraces
// of them, so that reading them costs the generator's machine little.
// The window ends hopLag ago: a host exports its spans in batches, every
// tracing.DefaultBatchTimeout at the longest, and Jaeger stores what it
// receives in batches of its own (200 ms); a window nearer now would miss
// the spans of the hops that have not exported theirs yet.
const (
	hopWindow = 5 * time.Second
	hopEvery  = 2 * time.Second
	hopLag    = tracing.DefaultBatchTimeout + time.Second
	hopTraces = 300
)

// watch publishes the breakdown of the last seconds' traces in jaeger
// (its query URL) on events until ctx ends.
func (r *traceRecorder) watch(ctx context.Context, jaeger string, run string, events *Stream) {
	tick := time.NewTicker(hopEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			to := now.Add(-hopLag)
			spans, err := jaegerapi.Spans(ctx, jaeger, jaegerapi.Query{From: to.Add(-hopWindow), To: to, Limit: hopTraces})
			if err != nil || len(spans) == 0 {
				continue // the next tick tries again; the final breakdown is hops.parquet's
			}
			for i := range spans {
				// Envoy's own spans carry neither tag.
				spans[i].Proxy = spans[i].Component == "" && spans[i].Peer == ""
			}
			check, rows := AnalyzeTraces(spans, -1, r.ratio)
			events.Publish(HopWindow{Run: run, From: to.Add(-hopWindow), To: to, Traces: check.Traces, Hops: HopStats(rows)})
		}
	}
}
