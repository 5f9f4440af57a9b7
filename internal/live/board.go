package live

import (
	"encoding/json"
	"maps"
	"sort"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// maxSeconds bounds the seconds (and resource samples) a board keeps of
// one run for a late client: the last hour of them, a few megabytes at
// most, however long `svclab up` stays up.
const maxSeconds = 3600

// Board is what the view shows, fed by the command as its work goes, and
// the log of events a client is replayed when it connects. The methods
// are safe to call from any goroutine; a nil *Board ignores them all, so
// a command without --ui feeds nothing.
type Board struct {
	mu   sync.Mutex
	seq  int64
	log  []event
	wake chan struct{} // closed and replaced on each event
	done bool

	exp     Experiment
	cur     *runState
	results int
}

// event is one server-sent event: its kind and its JSON. An event of the
// current run is dropped from the log when the next run starts, so that
// a long experiment's log holds its results, not every second of it.
type event struct {
	seq  int64
	kind string
	run  bool
	data []byte
}

// runState is the current run's figures, which /metrics reads too.
type runState struct {
	run      Run
	phase    string
	started  time.Time
	latency  *hdr.Histogram // the measurement so far
	requests int64
	errors   int64
	classes  map[string]int64
	rps      float64
	lagP99   time.Duration
	lagMax   time.Duration
	procs    map[string]Process
	replicas map[string]int
	counts   map[string]int // events of a bounded kind in the log
	finished bool
}

// NewBoard returns an empty board.
func NewBoard() *Board { return &Board{wake: make(chan struct{})} }

func (b *Board) publish(kind string, run bool, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// Every value sent is a struct of this package's own types.
		panic("live: encoding " + kind + ": " + err.Error())
	}
	b.seq++
	b.log = append(b.log, event{seq: b.seq, kind: kind, run: run, data: data})
	close(b.wake)
	b.wake = make(chan struct{})
}

// Experiment starts the view of the work: its command, design and plan.
func (b *Board) Experiment(e Experiment) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.exp = e
	b.publish("experiment", false, struct {
		Experiment
		At int64 `json:"at"` // ms since the epoch, for the page's estimate
	}{e, time.Now().UnixMilli()})
}

// RunStarted begins run r: the previous run's seconds leave the log.
func (b *Board) RunStarted(r Run) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.log[:0]
	for _, e := range b.log {
		if !e.run {
			kept = append(kept, e)
		}
	}
	b.log = kept
	b.cur = &runState{run: r, started: time.Now(), latency: newHist(), classes: map[string]int64{},
		procs: map[string]Process{}, replicas: map[string]int{}, counts: map[string]int{}}
	b.publish("run", true, r)
}

// Phase says what the current run is doing: deploying, warm-up,
// measuring, stopping.
func (b *Board) Phase(phase string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil || b.cur.phase == phase {
		return
	}
	b.cur.phase = phase
	b.publish("phase", true, map[string]string{"id": b.cur.run.ID, "phase": phase})
}

// secondOut is a second as the page reads it: milliseconds, this second
// and the measurement so far.
type secondOut struct {
	T        float64          `json:"t"`
	Warmup   bool             `json:"warmup"`
	Requests int64            `json:"requests"`
	Errors   int64            `json:"errors"`
	RPS      float64          `json:"rps"`
	Classes  map[string]int64 `json:"classes,omitempty"`
	Pct      Percentiles      `json:"latency"`
	LagP99   float64          `json:"lag_p99_ms"`
	LagMax   float64          `json:"lag_max_ms"`
	Late     int64            `json:"late_sends"`
	Dropped  int64            `json:"dropped"`
	Total    Totals           `json:"total"`
}

// Totals are the measurement so far, from the merged histogram of every
// second: at the end, the run's summary.json's total.
type Totals struct {
	Requests int64            `json:"requests"`
	Errors   int64            `json:"errors"`
	Classes  map[string]int64 `json:"errors_by_class,omitempty"`
	Pct      Percentiles      `json:"latency"`
}

// Percentiles are in ms, as summary.json's.
type Percentiles struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func percentilesOf(h *hdr.Histogram) Percentiles {
	if h == nil || h.TotalCount() == 0 {
		return Percentiles{}
	}
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 99})
	return Percentiles{P50: ms(v[0]), P90: ms(v[1]), P99: ms(v[2]), Max: ms(h.Max())}
}

func ms(us int64) float64 { return float64(us) / 1e3 }

// Second adds one second of the current run's load.
func (b *Board) Second(s Second) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.cur
	if c == nil {
		return
	}
	out := secondOut{T: s.Elapsed.Seconds(), Warmup: s.Warmup, Requests: s.Requests, Errors: s.Errors, RPS: s.RPS,
		LagP99: durMs(s.LagP99), LagMax: durMs(s.LagMax), Late: s.LateSends, Dropped: s.Dropped}
	if s.Latency != nil {
		out.Pct = percentilesOf(s.Latency)
	} else {
		out.Pct = Percentiles{P50: durMs(s.P50), P99: durMs(s.P99)}
	}
	phase := "warm-up"
	if !s.Warmup {
		phase = "measuring"
		if s.Latency != nil {
			c.latency.Merge(s.Latency)
		}
		c.requests += s.Requests
		c.errors += s.Errors
		out.Classes = map[string]int64{}
		for k, n := range s.ErrorClasses {
			if d := n - c.classes[k]; d > 0 {
				out.Classes[k] = d
			}
		}
		c.classes = maps.Clone(s.ErrorClasses)
		c.rps, c.lagP99, c.lagMax = s.RPS, s.LagP99, s.LagMax
	}
	out.Total = c.totals()
	if c.phase != phase {
		c.phase = phase
		b.publish("phase", true, map[string]string{"id": c.run.ID, "phase": phase})
	}
	b.publishBounded("second", out)
}

func (c *runState) totals() Totals {
	return Totals{Requests: c.requests, Errors: c.errors, Classes: maps.Clone(c.classes), Pct: percentilesOf(c.latency)}
}

func durMs(d time.Duration) float64 { return float64(d) / 1e6 }

// publishBounded publishes an event of the current run of a kind that
// comes every second, dropping that kind's oldest from the log once it
// holds maxSeconds of them.
func (b *Board) publishBounded(kind string, v any) {
	c := b.cur
	if c.counts[kind] == maxSeconds {
		for i, e := range b.log {
			if e.kind == kind {
				b.log = append(b.log[:i], b.log[i+1:]...)
				break
			}
		}
	} else {
		c.counts[kind]++
	}
	b.publish(kind, true, v)
}

// Resources sets the processes' CPU and memory at one moment.
func (b *Board) Resources(ps []Process) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return
	}
	for _, p := range ps {
		b.cur.procs[p.Name] = p
	}
	sorted := append([]Process(nil), ps...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Role != sorted[j].Role {
			return sorted[i].Role < sorted[j].Role
		}
		return sorted[i].Name < sorted[j].Name
	})
	b.publishBounded("resources", map[string]any{"t": time.Since(b.cur.started).Seconds(), "processes": sorted})
}

// Scaled records a change of a group's replicas.
func (b *Board) Scaled(s Scale) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur != nil {
		b.cur.replicas[s.Group] = s.To
	}
	b.publish("scale", true, s)
}

// FaultChanged records a fault's window.
func (b *Board) FaultChanged(f Fault) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := struct {
		Fault
		// FromS and ToS are seconds since the run started.
		FromS float64 `json:"from_s"`
		ToS   float64 `json:"to_s"`
	}{Fault: f}
	if b.cur != nil {
		out.FromS, out.ToS = f.From.Sub(b.cur.started).Seconds(), f.To.Sub(b.cur.started).Seconds()
	}
	b.publish("fault", true, out)
}

// Links gives the current run's telemetry backends.
func (b *Board) Links(l Links) {
	if b == nil || l == (Links{}) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.publish("links", true, l)
}

// Thresholds gives the thresholds and their state; final says the run's
// verdict, as opposed to the measurement so far. Only the last states
// stay in the log.
func (b *Board) Thresholds(ts []Threshold, final bool) {
	if b == nil || len(ts) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.replace("thresholds", map[string]any{"final": final, "thresholds": ts})
}

// Hops gives the per-hop breakdown of the current run's last seconds of
// traces; only the last stays in the log.
func (b *Board) Hops(h Hops) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.replace("hops", h)
}

// replace publishes an event of the current run that supersedes the
// last of its kind, which leaves the log: a late client is replayed the
// state, not its history.
func (b *Board) replace(kind string, v any) {
	for i := len(b.log) - 1; i >= 0; i-- {
		if b.log[i].kind == kind {
			b.log = append(b.log[:i], b.log[i+1:]...)
			break
		}
	}
	b.publish(kind, true, v)
}

// resultOut is a finished run as the runs table shows it.
type resultOut struct {
	Result
	Total Totals `json:"total"`
	At    int64  `json:"at"` // ms since the epoch
	// Kept marks a run committed before this command (--resume).
	Kept bool `json:"kept,omitempty"`
}

// Kept adds a run that finished before the work began (a resumed
// experiment's), with its totals as its summary.json has them.
func (b *Board) Kept(r Result, t Totals) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.results++
	b.publish("result", false, resultOut{Result: r, Total: t, At: time.Now().UnixMilli(), Kept: true})
}

// RunFinished ends the current run with its result; its totals are the
// board's, from the seconds it was given.
func (b *Board) RunFinished(r Result) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := resultOut{Result: r, At: time.Now().UnixMilli()}
	if b.cur != nil && b.cur.run.ID == r.ID {
		out.Total = b.cur.totals()
		b.cur.finished = true
		b.cur.phase = r.Status
	}
	b.results++
	b.publish("result", false, out)
}

// CapacityStep records one step of a capacity search and its verdict.
func (b *Board) CapacityStep(s Step) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.publish("step", false, s)
}

// End says the work is over, with its error if it failed; the page says
// so and stops listening.
func (b *Board) End(err error) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	b.done = true
	b.publish("end", false, map[string]string{"error": msg})
}

// since returns the events after seq, a channel closed at the next event,
// and whether the work has ended.
func (b *Board) since(seq int64) ([]event, <-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := sort.Search(len(b.log), func(i int) bool { return b.log[i].seq > seq })
	return append([]event(nil), b.log[i:]...), b.wake, b.done
}

// Histogram range, as the load generator's: 1 µs to 60 s, 3 digits.
func newHist() *hdr.Histogram { return hdr.New(1, 60_000_000, 3) }
