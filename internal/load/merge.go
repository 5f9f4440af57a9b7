package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/tempdir"
	"github.com/svclab/svclab/internal/warn"
)

// ShardFile is shard.json, which a generator of several writes beside its
// result files (svclab load --shard I/N --dir DIR): what Merge needs that
// summary.json does not hold.
const ShardFile = "shard.json"

// ShardInfo is shard.json.
type ShardInfo struct {
	// Shard is "I/N".
	Shard string `json:"shard"`
	// Started and Ended bound the generator's run, warm-up included.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Warnings are the generator's own, as run.json's "warnings" (a
	// shard.json of an older svclab holds plain strings, which read too).
	Warnings []warn.Warning `json:"warnings"`
}

// WriteShard writes the run's files into dir, as WriteDir does, and
// shard.json for Merge.
func (r *Result) WriteShard(dir string, s Shard) error {
	if err := r.WriteDir(dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(ShardInfo{Shard: s.String(), Started: r.Started, Ended: r.Ended,
		Warnings: append([]warn.Warning{}, r.Warnings...)}, "", "  ")
	if err != nil {
		return fmt.Errorf("load: encoding %s: %w", ShardFile, err)
	}
	return writeFileSync(filepath.Join(dir, ShardFile), append(b, '\n'))
}

// shardResult is one generator's result directory, read back.
type shardResult struct {
	dir     string
	info    ShardInfo
	sum     Summary
	series  []SeriesRow
	lat     map[string][]interval // by hlog tag
	svc     map[string][]interval
	samples bool
	// mstartMs is when its measurement started, from its HDR log
	mstartMs int64
}

// interval is one per-second histogram of an HDR log.
type interval struct {
	sec    int
	length float64
	h      *hdr.Histogram
}

// Merge combines the result directories of the generators of one run
// (each written by svclab load --shard I/N --dir DIR) into one result of
// the same shape as a single generator's: histograms are merged with
// HdrHistogram's Merge, per second and over the window, so every
// percentile is the pooled requests' own (never an average of
// percentiles); counts, errors and the per-second series are summed;
// raw samples are pooled. Generator is the whole's audit (sums, the worst
// lag, bottleneck when any generator was one) with each generator's own
// audit in Generator.PerGenerator; each generator's warnings are kept,
// naming it.
//
// The merged HDR logs and samples are written to a temporary directory
// that Result.Close removes; Result.WriteDir copies them out.
func Merge(dirs ...string) (*Result, error) {
	if len(dirs) == 0 {
		return nil, errors.New("load: merge: no result directories")
	}
	shards := make([]*shardResult, len(dirs))
	for i, d := range dirs {
		s, err := readShard(d)
		if err != nil {
			return nil, fmt.Errorf("load: merge: generator %d (%s): %w", i, d, err)
		}
		shards[i] = s
	}
	names, kinds, err := sameOperations(shards)
	if err != nil {
		return nil, fmt.Errorf("load: merge: %w", err)
	}
	tmp, err := tempdir.MkdirTemp("merge-")
	if err != nil {
		return nil, fmt.Errorf("load: merge: %w", err)
	}
	res := &Result{files: map[string]string{}, tempDir: tmp}
	if err := res.mergeShards(shards, names, kinds); err != nil {
		res.Close()
		return nil, fmt.Errorf("load: merge: %w", err)
	}
	return res, nil
}

func (res *Result) mergeShards(shards []*shardResult, names, kinds []string) error {
	tmp := res.tempDir
	// Histograms: per operation, per second, then over the window.
	type merged struct {
		bySec       map[int]*hdr.Histogram
		length      map[int]float64
		window      *hdr.Histogram
		lastSec     int
		anyInterval bool
	}
	mergeLog := func(pick func(*shardResult) map[string][]interval) map[string]*merged {
		out := map[string]*merged{}
		for _, n := range names {
			m := &merged{bySec: map[int]*hdr.Histogram{}, length: map[int]float64{}, window: newHist(), lastSec: -1}
			for _, s := range shards {
				for _, iv := range pick(s)[hlogTag(n)] {
					h, ok := m.bySec[iv.sec]
					if !ok {
						h = newHist()
						m.bySec[iv.sec] = h
					}
					h.Merge(iv.h)
					m.window.Merge(iv.h)
					m.length[iv.sec] = max(m.length[iv.sec], iv.length)
					m.lastSec = max(m.lastSec, iv.sec)
					m.anyInterval = true
				}
			}
			out[n] = m
		}
		return out
	}
	lat := mergeLog(func(s *shardResult) map[string][]interval { return s.lat })
	svc := mergeLog(func(s *shardResult) map[string][]interval { return s.svc })

	// Summary.
	sum := Summary{}
	for _, s := range shards {
		sum.DurationS = max(sum.DurationS, s.sum.DurationS)
		sum.LateSends += s.sum.LateSends
		sum.Dropped += s.sum.Dropped
	}
	for i, n := range names {
		op := Operation{Name: n, Kind: kinds[i], ErrorsByClass: map[string]int64{"timeout": 0, "connection": 0}}
		for _, s := range shards {
			so := s.sum.Operations[i]
			op.Count += so.Count
			op.Errors += so.Errors
			op.CompletedRPS += so.CompletedRPS
			for c, k := range so.ErrorsByClass {
				op.ErrorsByClass[c] += k
			}
			for c, e := range so.ErrorExamples {
				if op.ErrorExamples == nil {
					op.ErrorExamples = map[string]string{}
				}
				if op.ErrorExamples[c] == "" {
					op.ErrorExamples[c] = e
				}
			}
		}
		if got := lat[n].window.TotalCount(); got != op.Count {
			return fmt.Errorf("operation %q: the generators' HDR logs hold %d requests, their summaries %d", n, got, op.Count)
		}
		op.Latency, op.ServiceTime = stats(lat[n].window), stats(svc[n].window)
		if sum.DurationS > 0 {
			op.RPS = float64(op.Count) / sum.DurationS
		}
		sum.Operations = append(sum.Operations, op)
	}

	// Series: rows summed per second and operation, percentiles from the
	// merged histogram of that second.
	type key struct {
		sec int64
		op  string
	}
	rows := map[key]*SeriesRow{}
	var order []key
	for _, s := range shards {
		for _, r := range s.series {
			k := key{r.Second, r.Operation}
			row, ok := rows[k]
			if !ok {
				row = &SeriesRow{Second: r.Second, Operation: r.Operation}
				rows[k] = row
				order = append(order, k)
			}
			row.Requests += r.Requests
			row.Errors += r.Errors
			row.RPS += r.RPS
		}
	}
	slices.SortStableFunc(order, func(a, b key) int {
		if a.sec != b.sec {
			return int(a.sec - b.sec)
		}
		return slices.Index(names, a.op) - slices.Index(names, b.op)
	})
	for _, k := range order {
		row := rows[k]
		row.P50Ms, row.P90Ms, row.P99Ms = math.NaN(), math.NaN(), math.NaN()
		if m, ok := lat[k.op]; ok {
			if h := m.bySec[int(k.sec)]; h != nil && h.TotalCount() > 0 {
				v := h.ValueAtPercentilesSlice([]float64{50, 90, 99})
				row.P50Ms, row.P90Ms, row.P99Ms = float64(v[0])/1e3, float64(v[1])/1e3, float64(v[2])/1e3
			}
		}
		res.Series = append(res.Series, *row)
	}

	// HDR logs, one interval per second per operation as a generator
	// writes them.
	for _, s := range shards {
		if res.Started.IsZero() || (!s.info.Started.IsZero() && s.info.Started.Before(res.Started)) {
			res.Started = s.info.Started
		}
		if s.info.Ended.After(res.Ended) {
			res.Ended = s.info.Ended
		}
	}
	var mstartMs int64
	for i, s := range shards {
		if i == 0 || (s.mstartMs > 0 && s.mstartMs < mstartMs) {
			mstartMs = s.mstartMs
		}
	}
	mstart := time.UnixMilli(mstartMs)
	for _, l := range []struct {
		file, what string
		m          map[string]*merged
	}{{"latency.hlog", "latency", lat}, {"service_time.hlog", "service time", svc}} {
		path := filepath.Join(tmp, l.file)
		w, err := newHlog(path, mstart, l.what+" (merged from several generators)")
		if err != nil {
			return err
		}
		last := -1
		for _, n := range names {
			last = max(last, l.m[n].lastSec)
		}
		for sec := 0; sec <= last; sec++ {
			for _, n := range names {
				m := l.m[n]
				h := m.bySec[sec]
				if h == nil {
					if !m.anyInterval {
						continue
					}
					h = newHist()
				}
				w.interval(n, float64(sec), cmpOr(m.length[sec], 1), h)
			}
		}
		if err := w.close(); err != nil {
			return err
		}
		res.files[l.file] = path
	}

	// Raw samples, pooled, when every generator kept them.
	if all := !slices.ContainsFunc(shards, func(s *shardResult) bool { return !s.samples }); all {
		path := filepath.Join(tmp, "samples.parquet")
		if err := poolSamples(path, shards); err != nil {
			return err
		}
		res.files["samples.parquet"] = path
	}

	res.Summary = sum
	res.Generator, res.Warnings = mergeAudits(shards)
	res.Summary.Generator = &res.Generator
	return nil
}

func cmpOr(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// mergeAudits is the whole's audit: counts and CPU summed, the worst lag
// and GC figures, a bottleneck when any generator was one, and each
// generator's audit kept. Each generator's warnings are kept, naming it;
// a bottleneck is one generator_bottleneck warning for the whole, as the
// runner counts those.
func mergeAudits(shards []*shardResult) (Generator, []warn.Warning) {
	var g Generator
	var reasons []string
	var warnings []warn.Warning
	n := len(shards)
	fewSends := 0
	for i, s := range shards {
		a := Generator{}
		if s.sum.Generator != nil {
			a = *s.sum.Generator
		}
		a.PerGenerator = nil
		g.PerGenerator = append(g.PerGenerator, a)
		g.CPUS += a.CPUS
		g.CPUPercent += a.CPUPercent
		g.RunQueueWaitMs += a.RunQueueWaitMs
		g.Sends += a.Sends
		g.LateSends += a.LateSends
		g.Dropped += a.Dropped
		g.LagP50Ms = max(g.LagP50Ms, a.LagP50Ms)
		g.LagP90Ms = max(g.LagP90Ms, a.LagP90Ms)
		g.LagP99Ms = max(g.LagP99Ms, a.LagP99Ms)
		g.LagP999Ms = max(g.LagP999Ms, a.LagP999Ms)
		g.LagMaxMs = max(g.LagMaxMs, a.LagMaxMs)
		g.GCPauses += a.GCPauses
		g.GCPauseTotalMs += a.GCPauseTotalMs
		g.GCPauseMaxMs = max(g.GCPauseMaxMs, a.GCPauseMaxMs)
		g.LateInGCSeconds += a.LateInGCSeconds
		if g.HostTimer == nil {
			g.HostTimer = a.HostTimer
		}
		name := fmt.Sprintf("generator %d/%d", i, n)
		if a.Bottleneck {
			reasons = append(reasons, name+": "+a.Reason)
		}
		if a.Verdict == "too_few_sends" {
			fewSends++
		}
		for _, w := range s.info.Warnings {
			if w.Kind == warn.GeneratorBottleneck {
				continue // the whole's line below says it
			}
			warnings = append(warnings, w.About(name))
		}
	}
	switch {
	case len(reasons) > 0:
		g.Verdict, g.Bottleneck = "bottleneck", true
		g.Reason = strings.Join(reasons, "; ")
		warnings = append([]warn.Warning{warn.Newf(warn.GeneratorBottleneck, "%s", g.Reason)}, warnings...)
	case fewSends == n:
		g.Verdict = "too_few_sends"
		g.Reason = "too few sends to judge any generator"
	default:
		g.Verdict = "ok"
	}
	return g, warnings
}

// sameOperations checks that every generator measured the same operations
// and returns their names and kinds, "total" first.
func sameOperations(shards []*shardResult) (names, kinds []string, err error) {
	for _, o := range shards[0].sum.Operations {
		names = append(names, o.Name)
		kinds = append(kinds, o.Kind)
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%s: summary.json has no operations", shards[0].dir)
	}
	tags := map[string]string{}
	for _, n := range names {
		if other, dup := tags[hlogTag(n)]; dup {
			return nil, nil, fmt.Errorf("operations %q and %q have the same HDR log tag %q", other, n, hlogTag(n))
		}
		tags[hlogTag(n)] = n
	}
	for _, s := range shards[1:] {
		var got []string
		for _, o := range s.sum.Operations {
			got = append(got, o.Name)
		}
		if !slices.Equal(got, names) {
			return nil, nil, fmt.Errorf("%s measured operations %q, %s %q: not one load", s.dir, got, shards[0].dir, names)
		}
	}
	return names, kinds, nil
}

// readShard reads one generator's result directory.
func readShard(dir string) (*shardResult, error) {
	s := &shardResult{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s.sum); err != nil {
		return nil, fmt.Errorf("summary.json: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ShardFile)); err == nil {
		if err := json.Unmarshal(b, &s.info); err != nil {
			return nil, fmt.Errorf("%s: %w", ShardFile, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if s.series, err = parquet.ReadFile[SeriesRow](filepath.Join(dir, "timeseries.parquet")); err != nil {
		return nil, fmt.Errorf("timeseries.parquet: %w", err)
	}
	if s.lat, s.mstartMs, err = readHlog(filepath.Join(dir, "latency.hlog")); err != nil {
		return nil, err
	}
	if s.svc, _, err = readHlog(filepath.Join(dir, "service_time.hlog")); err != nil {
		return nil, err
	}
	_, err = os.Stat(filepath.Join(dir, "samples.parquet"))
	s.samples = err == nil
	return s, nil
}

// readHlog reads an HDR interval log as a generator writes it: intervals
// by tag, each with its second from the log's first interval, and when
// that interval began (the measurement's start), in ms since the epoch.
func readHlog(path string) (map[string][]interval, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	rd := hdr.NewHistogramLogReader(f)
	out := map[string][]interval{}
	first := int64(-1)
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		if h == nil {
			return out, first, nil
		}
		if first < 0 {
			first = h.StartTimeMs()
		}
		sec := int(math.Round(float64(h.StartTimeMs()-first) / 1e3))
		out[h.Tag()] = append(out[h.Tag()], interval{sec: sec, length: float64(h.EndTimeMs()-h.StartTimeMs()) / 1e3, h: h})
	}
}

// poolSamples writes every generator's samples.parquet into one, a
// batch at a time.
func poolSamples(path string, shards []*shardResult) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	w := parquet.NewGenericWriter[sampleRow](out, parquet.MaxRowsPerRowGroup(samplesPerGroup))
	buf := make([]sampleRow, sampleBatch)
	copyOne := func(src string) error {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		r := parquet.NewGenericReader[sampleRow](f)
		defer r.Close()
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", src, err)
			}
		}
	}
	for _, s := range shards {
		if err = copyOne(filepath.Join(s.dir, "samples.parquet")); err != nil {
			break
		}
	}
	if e := w.Close(); err == nil {
		err = e
	}
	if e := out.Sync(); err == nil {
		err = e
	}
	if e := out.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("pooling raw samples: %w", err)
	}
	return nil
}
