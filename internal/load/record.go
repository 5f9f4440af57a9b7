package load

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1 µs to 60 s at 3 significant digits, as the issue asks;
// slower answers are recorded as 60 s rather than lost.
const (
	histMinUs  = 1
	histMaxUs  = 60_000_000
	histDigits = 3
)

func newHist() *hdr.Histogram { return hdr.New(histMinUs, histMaxUs, histDigits) }

// toUs converts a duration in ns to a recordable µs value.
func toUs(ns int64) int64 {
	us := ns / 1000
	if us < histMinUs {
		return histMinUs
	}
	if us > histMaxUs {
		return histMaxUs
	}
	return us
}

// opRec holds one operation's measurements. Its fields are guarded by
// recorder.mu, except the spare histograms, which only the flushing
// goroutine touches.
type opRec struct {
	name, kind string
	lat, svc   *hdr.Histogram // the whole measurement window
	ilat, isvc *hdr.Histogram // the current second
	spLat      *hdr.Histogram // swapped with ilat at each flush
	spSvc      *hdr.Histogram
	count      int64
	errors     int64
	icount     int64
	ierrors    int64
	classes    map[string]int64
	examples   map[string]string // each class's first error, in its words

	// typical latency in µs, for the closed-loop pacing lag: the last
	// second's median, or the fastest seen before the first second ends.
	p50Us atomic.Int64
	minUs atomic.Int64
}

func (o *opRec) expectedNs() int64 {
	if v := o.p50Us.Load(); v > 0 {
		return v * 1000
	}
	if v := o.minUs.Load(); v > 0 {
		return v * 1000
	}
	return 0
}

// recorder collects every measurement of a run. One mutex guards it: the
// critical section is a few histogram increments, and the generator is
// meant to run on a core or two, where an uncontended lock is cheaper than
// per-worker shards that must be merged every second.
type recorder struct {
	mu     sync.Mutex
	mstart int64 // measurement start, ns since the run's base time
	ops    []*opRec

	// warm-up: only what the progress line needs.
	wlat    *hdr.Histogram
	wcount  int64
	werrors int64

	// self-audit, measurement window only
	lag     *hdr.Histogram
	sends   int64
	late    int64
	dropped int64
	// late sends per second of the window, to line up with GC pauses
	lateBySec []int64

	series  []SeriesRow
	latLog  *hlogWriter
	svcLog  *hlogWriter
	samples *sampleSink
	lastSec int // seconds flushed so far
	// closedDone is set when the result is taken; requests that outlive
	// the drain are not recorded after that.
	closedDone bool
}

// lateNs is how late a send must be to count as late.
const lateNs = int64(time.Millisecond)

func newRecorder(names, kinds []string, mstart int64) *recorder {
	r := &recorder{mstart: mstart, wlat: newHist(), lag: newHist()}
	for i, n := range names {
		r.ops = append(r.ops, &opRec{name: n, kind: kinds[i],
			lat: newHist(), svc: newHist(), ilat: newHist(), isvc: newHist(),
			spLat: newHist(), spSvc: newHist(), classes: map[string]int64{}, examples: map[string]string{}})
	}
	return r
}

// record adds one finished request or flow. win is the intended start of
// the iteration it belongs to, which decides warm-up or measurement;
// intended, sent and end are ns since the base time.
func (r *recorder) record(op int, win, intended, sent, end int64, class string) {
	lat, svc := toUs(end-intended), toUs(end-sent)
	failed := class != "ok"
	o := r.ops[op]
	r.mu.Lock()
	if r.closedDone {
		r.mu.Unlock()
		return
	}
	if m := o.minUs.Load(); m == 0 || lat < m {
		o.minUs.Store(lat)
	}
	if win < r.mstart {
		if o.kind == "request" {
			r.wlat.RecordValue(lat)
			r.wcount++
			if failed {
				r.werrors++
			}
		}
		r.mu.Unlock()
		return
	}
	o.add(lat, svc, failed, class)
	if r.samples != nil {
		r.samples.add(sampleRow{TNs: intended - r.mstart, Operation: o.name,
			LatencyUs: float64(end-intended) / 1e3, ServiceTimeUs: float64(end-sent) / 1e3, Status: class})
	}
	r.mu.Unlock()
}

// example keeps err as the example of its class for operation op, if
// that class has none yet.
func (r *recorder) example(op int, class string, err error) {
	r.mu.Lock()
	if o := r.ops[op]; o.examples[class] == "" {
		o.examples[class] = err.Error()
	}
	r.mu.Unlock()
}

// add records into the current second only: flush merges each second
// into the whole-window histograms and the requests into "total", so a
// request costs two histogram increments rather than eight.
func (o *opRec) add(lat, svc int64, failed bool, class string) {
	o.ilat.RecordValue(lat)
	o.isvc.RecordValue(svc)
	o.icount++
	if failed {
		o.ierrors++
		o.classes[class]++
	}
}

// send records the lag of one send: how much later than intended it
// left. late says whether the generator itself was late by more than
// lateNs, which in an open loop is the lag itself.
func (r *recorder) send(intended, lag int64, late bool) {
	if lag < 0 {
		lag = 0
	}
	r.mu.Lock()
	if intended >= r.mstart && !r.closedDone {
		r.sends++
		r.lag.RecordValue(toUs(lag))
		if late {
			r.late++
			sec := int((intended - r.mstart) / int64(time.Second))
			for len(r.lateBySec) <= sec {
				r.lateBySec = append(r.lateBySec, 0)
			}
			r.lateBySec[sec]++
		}
	}
	r.mu.Unlock()
}

// drop counts an arrival not sent because max_inflight requests were
// already outstanding.
func (r *recorder) drop(intended int64) {
	r.mu.Lock()
	if intended >= r.mstart {
		r.dropped++
	}
	r.mu.Unlock()
}

// Progress is what the generator reports once a second.
type Progress struct {
	// Elapsed is the time since the measurement started; negative during
	// warm-up.
	Elapsed time.Duration
	Warmup  bool
	// Requests, Errors, RPS and the percentiles cover the last second.
	Requests int64
	Errors   int64
	RPS      float64
	P50, P99 time.Duration
	// TotalRequests and TotalErrors count the whole measurement so far.
	TotalRequests int64
	TotalErrors   int64
	// LateSends and Dropped count the measurement so far.
	LateSends int64
	Dropped   int64
	// Latency is the last second's latency histogram of every request
	// (µs, as the result's): a live view merges the generators' measured
	// seconds exactly from it, as Merge merges their logs, and shows a
	// warm-up second's percentiles from its own.
	Latency *hdr.Histogram `json:"-"`
	// ErrorClasses counts the measurement's errors so far by class.
	ErrorClasses map[string]int64 `json:",omitempty"`
	// LagP99 and LagMax are the generator's send lag over the
	// measurement so far.
	LagP99, LagMax time.Duration
}

// progressJSON is Progress as a generator writes it for the process that
// started it (--progress-json): the histogram in HdrHistogram's
// compressed base64 encoding.
type progressJSON struct {
	progressFields
	Latency string `json:",omitempty"`
}

type progressFields Progress

// MarshalJSON encodes the latency histogram compactly.
func (p Progress) MarshalJSON() ([]byte, error) {
	j := progressJSON{progressFields: progressFields(p)}
	if p.Latency != nil {
		b, err := p.Latency.Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, fmt.Errorf("encoding the second's latency histogram: %w", err)
		}
		j.Latency = string(b)
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (p *Progress) UnmarshalJSON(b []byte) error {
	var j progressJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Progress(j.progressFields)
	if j.Latency != "" {
		h, err := hdr.Decode([]byte(j.Latency))
		if err != nil {
			return fmt.Errorf("decoding the second's latency histogram: %w", err)
		}
		p.Latency = h
	}
	return nil
}

func (p Progress) String() string {
	phase := ""
	if p.Warmup {
		phase = " (warm-up)"
	}
	return fmt.Sprintf("%6.1fs%s  %8.1f rps  %d errors  p50 %s  p99 %s  late %d  dropped %d",
		p.Elapsed.Seconds(), phase, p.RPS, p.Errors, fmtMs(p.P50), fmtMs(p.P99), p.LateSends, p.Dropped)
}

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

// flushWarmup ends one second of warm-up and reports it.
func (r *recorder) flushWarmup(elapsed time.Duration, length float64) Progress {
	r.mu.Lock()
	h := r.wlat
	r.wlat = newHist()
	p := Progress{Elapsed: elapsed, Warmup: true, Requests: r.wcount, Errors: r.werrors, Latency: h,
		P50: time.Duration(h.ValueAtQuantile(50)) * time.Microsecond,
		P99: time.Duration(h.ValueAtQuantile(99)) * time.Microsecond}
	r.wcount, r.werrors = 0, 0
	r.mu.Unlock()
	if length > 0 {
		p.RPS = float64(p.Requests) / length
	}
	return p
}

// flush ends second sec of the measurement, length seconds long: it adds
// a row per operation to the series and an interval to the HDR logs, and
// reports the "total" operation.
func (r *recorder) flush(sec int, length float64) Progress {
	type taken struct {
		lat, svc         *hdr.Histogram
		count, errs      int64
		totalCount, errT int64
	}
	tk := make([]taken, len(r.ops))
	var p Progress
	r.mu.Lock()
	for i, o := range r.ops[1:] {
		o.ilat, o.spLat = o.spLat, o.ilat
		o.isvc, o.spSvc = o.spSvc, o.isvc
		tk[i+1] = taken{lat: o.spLat, svc: o.spSvc, count: o.icount, errs: o.ierrors}
		o.icount, o.ierrors = 0, 0
	}
	p.LateSends, p.Dropped = r.late, r.dropped
	for _, o := range r.ops[1:] {
		for c, n := range o.classes {
			if o.kind == "request" && n > 0 {
				if p.ErrorClasses == nil {
					p.ErrorClasses = map[string]int64{}
				}
				p.ErrorClasses[c] += n
			}
		}
	}
	p.LagP99 = time.Duration(r.lag.ValueAtQuantile(99)) * time.Microsecond
	p.LagMax = time.Duration(r.lag.Max()) * time.Microsecond
	r.mu.Unlock()
	r.lastSec = sec + 1

	// Only this goroutine touches the spare histograms and the window
	// totals, so the merging happens outside the lock.
	tot := r.ops[0]
	tk[0] = taken{lat: tot.spLat, svc: tot.spSvc}
	for i, o := range r.ops {
		t := &tk[i]
		if i > 0 && o.kind == "request" {
			tot.spLat.Merge(t.lat)
			tot.spSvc.Merge(t.svc)
			tk[0].count += t.count
			tk[0].errs += t.errs
		}
	}
	for i, o := range r.ops {
		t := &tk[i]
		o.lat.Merge(t.lat)
		o.svc.Merge(t.svc)
		o.count += t.count
		o.errors += t.errs
		t.totalCount, t.errT = o.count, o.errors
	}

	if length <= 0 {
		length = 1e-3
	}
	qs := []float64{50, 90, 99}
	for i, o := range r.ops {
		t := tk[i]
		row := SeriesRow{Second: int64(sec), Operation: o.name, Requests: t.count, Errors: t.errs,
			RPS: float64(t.count) / length, P50Ms: math.NaN(), P90Ms: math.NaN(), P99Ms: math.NaN()}
		if t.count > 0 {
			v := t.lat.ValueAtPercentilesSlice(qs)
			row.P50Ms, row.P90Ms, row.P99Ms = float64(v[0])/1e3, float64(v[1])/1e3, float64(v[2])/1e3
			o.p50Us.Store(v[0])
		}
		r.series = append(r.series, row)
		start := float64(sec)
		if r.latLog != nil {
			r.latLog.interval(o.name, start, length, t.lat)
			r.svcLog.interval(o.name, start, length, t.svc)
		}
		if i == 0 {
			p.Requests, p.Errors, p.RPS = t.count, t.errs, row.RPS
			p.TotalRequests, p.TotalErrors = t.totalCount, t.errT
			if t.count > 0 {
				p.P50 = time.Duration(row.P50Ms * 1e6)
				p.P99 = time.Duration(row.P99Ms * 1e6)
			}
			p.Latency = hdr.Import(t.lat.Export())
		}
		t.lat.Reset()
		t.svc.Reset()
	}
	p.Elapsed = time.Duration(float64(sec)*1e9 + length*1e9)
	return p
}

// hlogWriter writes an HdrHistogram interval log (format version 1.3),
// which Java's HistogramLogReader, Python's hdrh and the Go reader read.
type hlogWriter struct {
	f   *os.File
	w   *bufio.Writer
	err error
}

func newHlog(path string, start time.Time, what string) (*hlogWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating HDR log: %w", err)
	}
	h := &hlogWriter{f: f, w: bufio.NewWriter(f)}
	secs := float64(start.UnixMilli()) / 1e3
	fmt.Fprintf(h.w, "#svclab load: %s in microseconds, one interval per second per operation (Tag)\n", what)
	fmt.Fprintf(h.w, "#[Histogram log format version 1.3]\n")
	fmt.Fprintf(h.w, "#[StartTime: %.3f (seconds since epoch), %s]\n", secs, start.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(h.w, "#[BaseTime: %.3f (seconds since epoch)]\n", secs)
	fmt.Fprintf(h.w, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n")
	return h, nil
}

// hlogTag turns an operation name into a tag: the format forbids spaces
// and commas in tags, so "GET /cart" becomes "GET_/cart".
func hlogTag(name string) string {
	return strings.NewReplacer(" ", "_", ",", "_", "\t", "_", "\r", "_", "\n", "_").Replace(name)
}

// interval writes one interval; the max column is in ms, as the format's
// readers expect.
func (h *hlogWriter) interval(op string, start, length float64, hist *hdr.Histogram) {
	if h.err != nil {
		return
	}
	b, err := hist.EncodeV2()
	if err != nil {
		h.err = fmt.Errorf("encoding histogram of %s: %w", op, err)
		return
	}
	_, h.err = fmt.Fprintf(h.w, "Tag=%s,%.3f,%.3f,%.3f,%s\n", hlogTag(op), start, length, float64(hist.Max())/1e3, b)
}

func (h *hlogWriter) close() error {
	err := h.err
	if e := h.w.Flush(); err == nil {
		err = e
	}
	if e := h.f.Sync(); err == nil {
		err = e
	}
	if e := h.f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", h.f.Name(), err)
	}
	return nil
}
