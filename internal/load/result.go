package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/warn"
)

// Result is what a run measured, in the shapes of docs/RESULTS.md.
type Result struct {
	Summary Summary
	// Series has one row per operation per second of the measurement.
	Series []SeriesRow
	// Generator is the self-audit, the "generator" object of run.json.
	Generator Generator
	// Warnings are for run.json's "warnings": a generator_bottleneck,
	// saturated, stalled, … warning (package warn) each.
	Warnings []warn.Warning
	// Started and Ended bound the run, warm-up included.
	Started, Ended time.Time
	// Warmup is what a warm-up by calls did (warmup.go), or nil.
	Warmup *Warmup

	// files streamed during the run, by their name in a run directory
	files   map[string]string
	tempDir string
}

// Summary is summary.json.
type Summary struct {
	DurationS  float64     `json:"duration_s"`
	Operations []Operation `json:"operations"`
	LateSends  int64       `json:"late_sends"`
	Dropped    int64       `json:"dropped"`
	// Generator is the generator's self-audit, as in run.json.
	Generator *Generator `json:"generator,omitempty"`
}

// Operation is one entry of summary.json's "operations".
type Operation struct {
	Name          string           `json:"name"`
	Kind          string           `json:"kind"` // "total", "request" or "flow"
	Count         int64            `json:"count"`
	Errors        int64            `json:"errors"`
	RPS           float64          `json:"rps"`
	CompletedRPS  float64          `json:"completed_rps"` // answers within the window per second
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	// ErrorExamples is, for each class of ErrorsByClass that failed a
	// request, the words of its first error, so that a run in which
	// every request failed says why ("dial tcp ...: connection refused").
	ErrorExamples map[string]string `json:"error_examples,omitempty"`
	Latency       Stats             `json:"latency"`
	ServiceTime   Stats             `json:"service_time"`
}

// Stats describe a latency distribution in milliseconds. With no requests
// they are all 0.
type Stats struct {
	MeanMs  float64 `json:"mean_ms"`
	StdevMs float64 `json:"stdev_ms"`
	MinMs   float64 `json:"min_ms"`
	P50Ms   float64 `json:"p50_ms"`
	P90Ms   float64 `json:"p90_ms"`
	P95Ms   float64 `json:"p95_ms"`
	P99Ms   float64 `json:"p99_ms"`
	P999Ms  float64 `json:"p999_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// SeriesRow is one row of timeseries.parquet.
type SeriesRow struct {
	Second    int64   `parquet:"second" json:"second"`
	Operation string  `parquet:"operation,dict" json:"operation"`
	Requests  int64   `parquet:"requests" json:"requests"`
	Errors    int64   `parquet:"errors" json:"errors"`
	RPS       float64 `parquet:"rps" json:"rps"`
	P50Ms     float64 `parquet:"p50_ms" json:"p50_ms"`
	P90Ms     float64 `parquet:"p90_ms" json:"p90_ms"`
	P99Ms     float64 `parquet:"p99_ms" json:"p99_ms"`
}

// Generator is the load generator's self-audit over the measurement
// window: run.json's "generator" object.
type Generator struct {
	CPUS       float64 `json:"cpu_s"`
	CPUPercent float64 `json:"cpu_percent"` // of one core
	// RunQueueWaitMs is how long the kernel kept the generator's threads
	// waiting for a CPU over the window: other work on its cores.
	RunQueueWaitMs float64 `json:"runqueue_wait_ms"`
	// Sends counts the sends of the window the lag covers.
	Sends int64 `json:"sends"`
	// LateSends counts sends more than 1 ms late: behind the arrival
	// schedule in an open loop, behind the end of the think time in a
	// closed loop (none without think time: nothing is scheduled).
	LateSends int64 `json:"late_sends"`
	Dropped   int64 `json:"dropped"`
	// Lag is how late sends left: behind the arrival schedule in an open
	// loop, behind each user's pace in a closed loop.
	LagP50Ms  float64 `json:"lag_p50_ms"`
	LagP90Ms  float64 `json:"lag_p90_ms"`
	LagP99Ms  float64 `json:"lag_p99_ms"`
	LagP999Ms float64 `json:"lag_p999_ms"`
	LagMaxMs  float64 `json:"lag_max_ms"`
	// GC pauses from runtime/metrics' pause-latency histogram: the total
	// sums its bucket midpoints, the max is the upper bound of the bucket
	// that holds it.
	GCPauseTotalMs float64 `json:"gc_pause_total_ms"`
	GCPauseMaxMs   float64 `json:"gc_pause_max_ms"`
	GCPauses       int64   `json:"gc_pauses"`
	// LateInGCSeconds counts the late sends that fell in a second of the
	// window in which the generator paused for GC.
	LateInGCSeconds int64 `json:"late_sends_in_gc_seconds"`
	// Verdict is "ok", "bottleneck" or "too_few_sends".
	Verdict    string `json:"verdict"`
	Bottleneck bool   `json:"bottleneck"`
	// Reason says why Bottleneck is set, or why there is no verdict;
	// empty otherwise.
	Reason string `json:"reason"`
	// HostTimer is the host's timer lateness measured before the
	// experiment (or the load run), when measured.
	HostTimer *hostclock.Calibration `json:"host_timer,omitempty"`
	// Sentinel is the lateness of the bare timer loop run beside an open
	// loop on its CPUs over its window, and SentinelCPUPercent what that
	// loop cost (of one core).
	Sentinel           *hostclock.Calibration `json:"sentinel,omitempty"`
	SentinelCPUPercent float64                `json:"sentinel_cpu_percent,omitempty"`
	// Floor is what an open loop's send lag was judged against.
	Floor *Floor `json:"floor,omitempty"`
	// PerGenerator holds each generator's own audit when the load was
	// split over several (load.generators; Merge); the fields above are
	// then the whole's.
	PerGenerator []Generator `json:"generators,omitempty"`
}

func (r *runner) finish(started time.Time, ctxErr error) (*Result, error) {
	if !r.audit.started {
		r.audit.start()
	}
	sec := r.rec.lastSec
	length := secs(r.stopAt - r.mstart - int64(sec)*int64(time.Second))
	length = min(max(length, 1e-3), 1)
	if r.stopAt > r.mstart {
		p := r.rec.flush(sec, length)
		r.progress(p)
	}
	gcTotal := r.audit.sampleGC(sec)
	cpu := cpuTime() - r.audit.cpu0
	runWait := max(runQueueWait()-r.audit.wait0, 0)
	wall := time.Since(r.audit.t0)
	window, windowCPU, windowErr := r.windowFloor()

	rec := r.rec
	rec.mu.Lock()
	latLog, svcLog, samples := rec.latLog, rec.svcLog, rec.samples
	rec.latLog, rec.svcLog, rec.samples = nil, nil, nil
	rec.closedDone = true
	rec.mu.Unlock()

	res := &Result{Started: started, Ended: time.Now(), Series: rec.series,
		files: map[string]string{}, tempDir: r.tempDir}
	var errs []error
	for name, h := range map[string]*hlogWriter{"latency.hlog": latLog, "service_time.hlog": svcLog} {
		errs = append(errs, h.close())
		res.files[name] = filepath.Join(r.dir, name)
	}
	if samples != nil {
		errs = append(errs, samples.close())
		res.files["samples.parquet"] = filepath.Join(r.dir, "samples.parquet")
	}

	dur := secs(max(r.stopAt-r.mstart, 0))
	s := Summary{DurationS: dur, LateSends: rec.late, Dropped: rec.dropped}
	tot := rec.ops[0]
	for _, o := range rec.ops[1:] {
		if o.kind == "request" {
			for c, n := range o.classes {
				tot.classes[c] += n
			}
			for c, e := range o.examples {
				if tot.examples[c] == "" {
					tot.examples[c] = e
				}
			}
		}
	}
	for _, o := range rec.ops {
		op := Operation{Name: o.name, Kind: o.kind, Count: o.count, Errors: o.errors,
			ErrorsByClass: map[string]int64{"timeout": 0, "connection": 0},
			Latency:       stats(o.lat), ServiceTime: stats(o.svc)}
		if dur > 0 {
			op.RPS = float64(o.count) / dur
		}
		for c, n := range o.classes {
			op.ErrorsByClass[c] = n
			if e := o.examples[c]; e != "" && n > 0 {
				if op.ErrorExamples == nil {
					op.ErrorExamples = map[string]string{}
				}
				op.ErrorExamples[c] = e
			}
		}
		s.Operations = append(s.Operations, op)
	}
	res.Summary = s

	g := Generator{CPUS: cpu.Seconds(), Sends: rec.sends, LateSends: rec.late, Dropped: rec.dropped,
		GCPauseTotalMs: float64(gcTotal) / 1e6, GCPauseMaxMs: r.audit.maxPause * 1e3,
		HostTimer: r.opt.HostTimer, Sentinel: window, SentinelCPUPercent: windowCPU}
	if wall > 0 {
		g.CPUPercent = 100 * cpu.Seconds() / wall.Seconds()
	}
	g.RunQueueWaitMs = float64(runWait) / 1e6
	if rec.lag.TotalCount() > 0 {
		v := rec.lag.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
		g.LagP50Ms, g.LagP90Ms, g.LagP99Ms, g.LagP999Ms = float64(v[0])/1e3, float64(v[1])/1e3, float64(v[2])/1e3, float64(v[3])/1e3
		g.LagMaxMs = float64(rec.lag.Max()) / 1e3
	}
	gcSecs := 0
	for sec, n := range r.audit.gcBySec {
		g.GCPauses += n
		if n > 0 {
			gcSecs++
			if sec < len(rec.lateBySec) {
				g.LateInGCSeconds += rec.lateBySec[sec]
			}
		}
	}
	res.Warnings = append(res.Warnings, judge(&g, auditInput{closed: r.closed, sends: rec.sends, lag: rec.lag,
		wall: wall, cpuPercent: g.CPUPercent, cores: hostclock.UsableCPUs(), runWait: runWait, gcPause: gcTotal,
		dropped: rec.dropped, maxInflight: r.cfg.maxInflight(), floor: r.opt.HostTimer,
		window: window, windowErr: windowErr, total: s.Operations[0]})...)
	if secs := int(math.Ceil(dur)); gcLineUp(g.LateInGCSeconds, g.LateSends, gcSecs, secs) {
		res.Warnings = append(res.Warnings, warn.Newf(warn.GeneratorGC, "%d of %d late sends fell in the %d of %d seconds in which the generator paused for GC (%d pauses, longest ≤ %.2f ms)", g.LateInGCSeconds, g.LateSends, gcSecs, secs, g.GCPauses, g.GCPauseMaxMs))
	}
	if ctxErr != nil {
		res.Warnings = append(res.Warnings, warn.Warning{Kind: warn.Interrupted, Text: fmt.Sprintf("interrupted after %.1f s of measurement", dur)})
	}
	res.Generator = g
	res.Summary.Generator = &res.Generator

	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("load: %w", err)
	}
	if ctxErr != nil {
		return res, fmt.Errorf("load: run interrupted: %w", ctxErr)
	}
	return res, nil
}

func stats(h *hdr.Histogram) Stats {
	if h.TotalCount() == 0 {
		return Stats{}
	}
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 95, 99, 99.9})
	ms := func(us int64) float64 { return float64(us) / 1e3 }
	return Stats{MeanMs: h.Mean() / 1e3, StdevMs: h.StdDev() / 1e3, MinMs: ms(h.Min()),
		P50Ms: ms(v[0]), P90Ms: ms(v[1]), P95Ms: ms(v[2]), P99Ms: ms(v[3]), P999Ms: ms(v[4]), MaxMs: ms(h.Max())}
}

// Op returns the summary of the named operation ("total" included).
func (r *Result) Op(name string) (Operation, bool) {
	for _, o := range r.Summary.Operations {
		if o.Name == name {
			return o, true
		}
	}
	return Operation{}, false
}

// WriteDir writes the run's files into dir, as docs/RESULTS.md lays out a
// run directory: summary.json, timeseries.parquet, latency.hlog,
// service_time.hlog and, with raw samples on, samples.parquet. Every file
// is fsynced; the directory itself is the caller's to commit.
func (r *Result) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("load: result directory: %w", err)
	}
	b, err := json.MarshalIndent(r.Summary, "", "  ")
	if err != nil {
		return fmt.Errorf("load: encoding summary.json: %w", err)
	}
	if err := writeFileSync(filepath.Join(dir, "summary.json"), append(b, '\n')); err != nil {
		return err
	}
	if err := r.writeSeries(filepath.Join(dir, "timeseries.parquet")); err != nil {
		return err
	}
	names := make([]string, 0, len(r.files))
	for n := range r.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := copyFile(r.files[n], filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// GeneratorJSON is the "generator" object for run.json.
func (r *Result) GeneratorJSON() ([]byte, error) { return json.Marshal(r.Generator) }

// Close removes the temporary files of a run made without Options.Dir.
func (r *Result) Close() error {
	if r.tempDir == "" {
		return nil
	}
	err := os.RemoveAll(r.tempDir)
	r.tempDir = ""
	return err
}

func (r *Result) writeSeries(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	w := parquet.NewGenericWriter[SeriesRow](f)
	_, err = w.Write(r.Series)
	if e := w.Close(); err == nil {
		err = e
	}
	if e := f.Sync(); err == nil {
		err = e
	}
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("load: writing %s: %w", path, err)
	}
	return nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	_, err = f.Write(b)
	if e := f.Sync(); err == nil {
		err = e
	}
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("load: writing %s: %w", path, err)
	}
	return nil
}

// copyFile copies src to dst unless they are the same file (a run streamed
// into its own directory).
func copyFile(src, dst string) error {
	if a, err := filepath.Abs(src); err == nil {
		if b, err := filepath.Abs(dst); err == nil && a == b {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	_, err = io.Copy(out, in)
	if e := out.Sync(); err == nil {
		err = e
	}
	if e := out.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("load: copying %s to %s: %w", src, dst, err)
	}
	return nil
}

// Table writes the summary as an aligned table, one row per operation:
// each percentile of latency (from the intended send) beside the same
// percentile of service time (from the actual send), so that the part of
// a tail the target did not cause shows as their difference.
func (r *Result) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t\t\t\t\tlatency / service time, ms\t\t\t\t\t\n")
	fmt.Fprintf(tw, "operation\tkind\tcount\terrors\trps\tp50\tp90\tp99\tp99.9\tmax\t\n")
	pair := func(a, b float64) string { return fmt.Sprintf("%.3f / %.3f", a, b) }
	for _, o := range r.Summary.Operations {
		l, s := o.Latency, o.ServiceTime
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t\n",
			o.Name, o.Kind, o.Count, o.Errors, o.RPS, pair(l.P50Ms, s.P50Ms), pair(l.P90Ms, s.P90Ms),
			pair(l.P99Ms, s.P99Ms), pair(l.P999Ms, s.P999Ms), pair(l.MaxMs, s.MaxMs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	g := r.Generator
	fmt.Fprintf(w, "\nduration %.1fs  sends %d  late sends %d  dropped %d  send lag p50/p99/p99.9/max %.3f/%.3f/%.3f/%.3f ms  generator CPU %.0f%%  GC pauses %d (max %.2f ms)  verdict %s\n",
		r.Summary.DurationS, g.Sends, g.LateSends, g.Dropped, g.LagP50Ms, g.LagP99Ms, g.LagP999Ms, g.LagMaxMs, g.CPUPercent, g.GCPauses, g.GCPauseMaxMs, g.Verdict)
	if f := g.HostTimer; f != nil {
		fmt.Fprintf(w, "host timer floor (bare sleep loop) p50/p99/p99.9/max %.3f/%.3f/%.3f/%.3f ms\n", f.P50Ms, f.P99Ms, f.P999Ms, f.MaxMs)
	}
	if f := g.Sentinel; f != nil {
		fmt.Fprintf(w, "window's floor (bare sleep loop beside the run) p50/p99/p99.9/max %.3f/%.3f/%.3f/%.3f ms  its CPU %.2f%%\n", f.P50Ms, f.P99Ms, f.P999Ms, f.MaxMs, g.SentinelCPUPercent)
	}
	for _, o := range r.Summary.Operations {
		var classes []string
		for c, n := range o.ErrorsByClass {
			if n > 0 {
				classes = append(classes, fmt.Sprintf("%s=%d", c, n))
			}
		}
		if len(classes) > 0 {
			sort.Strings(classes)
			fmt.Fprintf(w, "errors of %s: %v\n", o.Name, classes)
			for _, c := range slices.Sorted(maps.Keys(o.ErrorExamples)) {
				fmt.Fprintf(w, "  the first %s: %s\n", c, o.ErrorExamples[c])
			}
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn.Text)
	}
	_, err := fmt.Fprint(w)
	return err
}
