package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/tempdir"
)

// Options are the parts of a run that are not load settings.
type Options struct {
	// Progress, when set, is called once a second from the generator's
	// own goroutine, during warm-up too; it must return quickly.
	Progress func(Progress)
	// Dir, when set, is where the HDR logs and raw samples are streamed
	// during the run (the run directory being written, say). When empty
	// they go to a temporary directory that Result.Close removes.
	Dir string
	// HostTimer, when set, is this host's timer wake-up lateness
	// (hostclock.Calibrate): the floor the generator's send lag is judged
	// against. Without it the audit falls back to a fixed 1 ms rule.
	HostTimer *hostclock.Calibration
	// Shard, for one generator of several, shifts its constant-rate
	// schedule by Index/Count of its own gap (see Config.Share, which
	// gives it its share of the load).
	Shard Shard
	// StartAt, when set, is the wall-clock moment the run starts, so that
	// several generators start together (svclab load --start-at).
	StartAt time.Time
	// Measuring, when set, is called once, from Run's goroutine, with the
	// wall-clock moment the measurement window begins (load.warmup after
	// the start, or the end of a warm-up by calls), before the window's
	// first request: what is timed from the window, such as a fault 2 s
	// into it, waits for it.
	Measuring func(start time.Time)
	// Sentinel, when set, is the svclab binary an open loop runs as
	// `svclab hostclock --sentinel` beside itself for its window: the
	// floor its send lag is then judged against (sentinel.go).
	Sentinel string
}

// Run drives t as cfg says and returns what it measured. It returns when
// the measurement window is over (or cfg.Requests iterations were run) and
// the requests in flight have finished or timed out. When ctx is canceled
// it stops early and returns the result so far together with an error
// wrapping ctx.Err().
func Run(ctx context.Context, cfg Config, t *Target, opt Options) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	r, err := newRunner(cfg, t, opt)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

func (t *Target) check() error {
	if t == nil || len(t.Ops) == 0 {
		return errors.New("load: target has no operations")
	}
	seen := map[string]bool{"total": true}
	for i, op := range t.Ops {
		if op.Do == nil {
			return fmt.Errorf("load: target operation %d (%q) has no Do function", i, op.Name)
		}
		if op.Name == "" || seen[op.Name] {
			return fmt.Errorf("load: target operation %d: name %q is empty, \"total\" or used twice", i, op.Name)
		}
		seen[op.Name] = true
		if t.Weighted && !(op.Weight > 0) {
			return fmt.Errorf("load: target operation %q: weight must be > 0 in a weighted target, got %v", op.Name, op.Weight)
		}
	}
	if t.Flow != "" && seen[t.Flow] {
		return fmt.Errorf("load: flow name %q is taken by an operation or by \"total\"", t.Flow)
	}
	return nil
}

type runner struct {
	cfg     Config
	t       *Target
	opt     Options
	rec     *recorder
	closed  bool // closed loop
	base    time.Time
	mstart  int64 // measurement start, ns since base
	mend    int64 // measurement end as planned
	stopAt  int64 // when sending stopped, ns since base
	segs    []segment
	flowIdx int // recorder index of the flow, 0 when there is none
	iterIdx int // the operation whose typical latency paces closed-loop users
	cum     []float64
	seed    uint64
	timeout time.Duration

	// completed counts, per recorder operation, the answers to
	// iterations of the window that came within it; windowEnd is when
	// the window ended (mend, or earlier when sending stopped early).
	completed []atomic.Int64
	windowEnd atomic.Int64

	budget     atomic.Int64 // iterations left when cfg.Requests > 0
	budgetOnce sync.Once
	budgetDone chan struct{}
	inflight   atomic.Int64

	dir, tempDir string
	audit        auditor
	interrupted  bool
	sentinel     *sentinelProc
	stall        *stallWatch // open loop only
	warmup       *callWarmup // a warm-up by calls (warmup.go), or nil
}

func newRunner(cfg Config, t *Target, opt Options) (*runner, error) {
	warm := takeCallWarmup(&cfg) // warmup.go: before the loop, not in it
	r := &runner{cfg: cfg, warmup: warm, t: t, opt: opt, closed: cfg.mode() == "closed",
		timeout: cfg.timeout(), budgetDone: make(chan struct{})}
	r.seed = uint64(cfg.Seed)
	if r.seed == 0 {
		r.seed = uint64(time.Now().UnixNano())
	}
	if cfg.Requests > 0 {
		r.budget.Store(cfg.Requests)
	}
	names := []string{"total"}
	kinds := []string{"total"}
	for _, op := range t.Ops {
		names = append(names, op.Name)
		kinds = append(kinds, "request")
	}
	if t.Flow != "" {
		r.flowIdx = len(names)
		names = append(names, t.Flow)
		kinds = append(kinds, "flow")
	}
	switch {
	case r.flowIdx > 0:
		r.iterIdx = r.flowIdx
	case len(t.Ops) == 1:
		r.iterIdx = 1
	}
	sum := 0.0
	for _, op := range t.Ops {
		sum += op.Weight
		r.cum = append(r.cum, sum)
	}
	if r.closed {
		r.segs = profile(&cfg, float64(cfg.Users), 0, func(s Stage) float64 { return float64(s.Users) })
	} else {
		r.segs = profile(&cfg, cfg.Rate, cfg.WarmupRate, func(s Stage) float64 { return s.Rate })
	}
	r.mstart = int64(cfg.Warmup)
	r.mend = r.mstart + int64(cfg.MeasureDuration())
	r.rec = newRecorder(names, kinds, r.mstart)
	r.completed = make([]atomic.Int64, len(names))
	r.windowEnd.Store(r.mend)
	return r, nil
}

func (r *runner) now() int64 { return int64(time.Since(r.base)) }

func (r *runner) run(ctx context.Context) (*Result, error) {
	r.dir = r.opt.Dir
	if r.dir == "" {
		d, err := tempdir.MkdirTemp("load-")
		if err != nil {
			return nil, fmt.Errorf("load: temporary directory for HDR logs: %w", err)
		}
		r.dir, r.tempDir = d, d
	}
	if !r.opt.StartAt.IsZero() {
		if err := waitUntil(ctx, r.opt.StartAt); err != nil {
			return nil, r.abandon(err)
		}
	}
	started := time.Now()
	var warm *Warmup
	if r.warmup != nil {
		var err error
		if warm, err = r.warmUp(ctx); err != nil {
			return nil, r.abandon(err)
		}
	}
	r.base = time.Now()
	mwall := r.base.Add(time.Duration(r.mstart))
	if r.opt.Measuring != nil {
		r.opt.Measuring(mwall)
	}
	var err error
	if r.rec.latLog, err = newHlog(filepath.Join(r.dir, "latency.hlog"), mwall, "latency"); err != nil {
		return nil, r.abandon(err)
	}
	if r.rec.svcLog, err = newHlog(filepath.Join(r.dir, "service_time.hlog"), mwall, "service time"); err != nil {
		return nil, r.abandon(err)
	}
	if r.cfg.RawSamples {
		if r.rec.samples, err = newSampleSink(filepath.Join(r.dir, "samples.parquet")); err != nil {
			return nil, r.abandon(err)
		}
	}
	r.sentinel = r.startSentinel(ctx)
	if r.mstart == 0 {
		r.audit.start()
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopTick := make(chan struct{})
	tickDone := make(chan struct{})
	go r.tick(stopTick, tickDone)
	if r.closed {
		r.closedLoop(runCtx, cancel)
	} else {
		r.openLoop(runCtx, cancel)
	}
	close(stopTick)
	<-tickDone
	r.interrupted = ctx.Err() != nil
	res, err := r.finish(started, ctx.Err())
	if res != nil && warm != nil {
		res.Warmup = warm
		if w, ok := warm.Warning(); ok {
			res.Warnings = append(res.Warnings, w)
		}
	}
	if res != nil && res.Summary.DurationS > 0 {
		for i := range res.Summary.Operations {
			res.Summary.Operations[i].CompletedRPS = float64(r.completed[i].Load()) / res.Summary.DurationS
		}
		if w, ok := saturation(r.closed, res.Summary, res.Generator.Sends); ok {
			res.Warnings = append(res.Warnings, w)
		}
		if r.stall != nil {
			if w, ok := r.stall.warning(r.stopAt); ok {
				res.Warnings = append(res.Warnings, w)
			}
		}
	}
	return res, err
}

// endWindow ends the window at now when sending stops before its planned
// end, so that later answers are not counted as completed within it.
func (r *runner) endWindow(now int64) {
	if now < r.mend {
		r.windowEnd.Store(now)
	}
}

// complete counts an answer to recorder operation op of an iteration
// intended at intended, which came at end.
func (r *runner) complete(op int, intended, end int64) {
	if intended >= r.mstart && end <= r.windowEnd.Load() {
		r.completed[op].Add(1)
	}
}

// abandon cleans up after a run that could not start.
func (r *runner) abandon(err error) error {
	for _, h := range []*hlogWriter{r.rec.latLog, r.rec.svcLog} {
		if h != nil {
			h.close()
		}
	}
	if r.tempDir != "" {
		os.RemoveAll(r.tempDir)
	}
	return fmt.Errorf("load: %w", err)
}

// tick ends each second: of warm-up (progress only), then of the
// measurement (series, HDR log intervals, progress). The last, possibly
// partial, second is flushed by finish once the requests in flight are in.
func (r *runner) tick(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(at int64) bool {
		if d := at - r.now(); d > 0 {
			timer.Reset(time.Duration(d))
			select {
			case <-timer.C:
				return true
			case <-stop:
				return false
			}
		}
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	for k := int64(1); r.mstart > 0; k++ {
		b := min(k*int64(time.Second), r.mstart)
		if !wait(b) {
			return
		}
		p := r.rec.flushWarmup(time.Duration(b-r.mstart), secs(b-(k-1)*int64(time.Second)))
		r.progress(p)
		if b == r.mstart {
			r.audit.start()
			break
		}
	}
	for sec := 0; ; sec++ {
		b := r.mstart + int64(sec+1)*int64(time.Second)
		if b >= r.mend || !wait(b) {
			return
		}
		p := r.rec.flush(sec, 1)
		r.audit.sampleGC(sec)
		r.progress(p)
	}
}

func (r *runner) progress(p Progress) {
	if r.opt.Progress != nil {
		r.opt.Progress(p)
	}
}

// takeBudget reports whether one more measured iteration may start.
func (r *runner) takeBudget(intended int64) bool {
	if r.cfg.Requests <= 0 || intended < r.mstart {
		return true
	}
	if r.budget.Add(-1) >= 0 {
		return true
	}
	r.budgetOnce.Do(func() { close(r.budgetDone) })
	return false
}

// openLoop sends at the planned arrival times whatever the target does.
// Each arrival runs in its own goroutine, so a slow answer never delays
// the next send; past max_inflight outstanding arrivals, new ones are
// counted as dropped instead of queueing without bound.
func (r *runner) openLoop(ctx context.Context, cancel context.CancelFunc) {
	var wg sync.WaitGroup
	jobs := make(chan arrival)
	maxIn := int64(r.cfg.maxInflight())
	poisson := r.cfg.Arrival == "poisson"
	rng := rand.New(rand.NewPCG(r.seed, math.MaxUint64))
	sl := &pacer{Sleeper: hostclock.NewSleeper()}
	defer sl.Close()
	r.stall = newStallWatch(r.mstart, r.mend)
	// Arrival n is where the rate's integral from the start reaches
	// `area`; solving from the start each time, rather than stepping from
	// the previous arrival, keeps rounding from drifting the schedule.
	area := r.opt.Shard.phase()
	if poisson {
		area = 0
	}
	prev := int64(0)
	stopped := r.mend
loop:
	for n := int64(0); ; n++ {
		if poisson {
			area += rng.ExpFloat64()
		} else if n > 0 {
			area++
		}
		t := nextArrival(r.segs, 0, area)
		if math.IsInf(t, 1) || nanos(t) >= r.mend {
			break
		}
		ti := nanos(t)
		if n == 0 {
			prev = ti - int64(time.Second) // no gap yet: do not limit the margin
		}
		if !r.sleepUntil(ctx, sl, ti, ti-prev) {
			stopped = r.now()
			break loop
		}
		// The loop is bounded by the clock, not only by the schedule:
		// a generator that cannot keep up (a rate beyond what it can
		// pace) would otherwise plan its way through every arrival of
		// the window long after the window is over. An arrival a little
		// late at the window's end is still sent, its lag recorded; one
		// not sent by lateSendGrace after the end never is.
		now := r.now()
		if now >= r.mend+lateSendGrace {
			break
		}
		prev = ti
		if !r.takeBudget(ti) {
			stopped = now
			break
		}
		lag := now - ti
		if r.inflight.Load() >= maxIn {
			r.rec.drop(ti)
			r.stall.arrival(now, false)
			continue
		}
		r.rec.send(ti, lag, lag > lateNs)
		r.inflight.Add(1)
		r.stall.arrival(now, true)
		// An idle worker takes the arrival; only when all are busy is a
		// new one started, so a steady state allocates nothing per send
		// (a goroutine per arrival costs its closure every time).
		select {
		case jobs <- arrival{n, ti}:
		default:
			wg.Add(1)
			go r.worker(ctx, &wg, jobs, arrival{n, ti})
		}
		// Let the worker send now, on this thread, rather than after
		// this one has planned and armed the next wake-up (two system calls,
		// tens of µs on a virtual machine) or once another thread wakes.
		runtime.Gosched()
	}
	close(jobs)
	r.stopAt = min(stopped, r.mend)
	r.endWindow(r.stopAt)
	r.drain(&wg, cancel)
}

// arrival is one open-loop send handed to a worker.
type arrival struct {
	n  int64 // its number, which seeds its session
	ti int64
}

// worker runs arrivals until the open loop closes jobs. Workers are as
// many as the most arrivals ever in flight at once, at most max_inflight;
// each keeps one session, reset for every arrival, so that a steady state
// allocates none (a sync.Pool would lose them at every GC).
func (r *runner) worker(ctx context.Context, wg *sync.WaitGroup, jobs <-chan arrival, a arrival) {
	defer wg.Done()
	s := newSession(0, r.seed, r.timeout)
	for ok := true; ok; a, ok = <-jobs {
		s.reset(int(a.n), r.seed)
		r.iterate(ctx, s, a.ti)
		r.stall.answered(r.now())
		r.inflight.Add(-1)
	}
}

func newSession(user int, seed uint64, timeout time.Duration) *Session {
	pcg := rand.NewPCG(seed, uint64(user))
	return &Session{User: user, Timeout: timeout, Rand: rand.New(pcg), pcg: pcg}
}

// sleepUntil waits until ti; false means ctx is done. gap is the time
// since the previous arrival. It asks the kernel to wake it early by the
// wake-up delay it has been seeing, then yields until ti: on a virtual
// machine a timer wakes a thread 50-500 µs late, which would otherwise be
// added to every latency, while spinning the whole wait would burn a
// core. The early margin is the delay's running mean plus twice its
// running deviation (as TCP estimates a retransmission timeout), so most
// wake-ups come before ti, and at most half the gap between arrivals, so
// high rates do not spin all the time.
func (r *runner) sleepUntil(ctx context.Context, sl *pacer, ti, gap int64) bool {
	margin := min(sl.mean+2*sl.dev, maxSlack, gap/2)
	for {
		d := ti - r.now() - margin
		if d <= 0 {
			break
		}
		d = min(d, int64(time.Second)) // so that a canceled run stops promptly
		asked := r.now() + d
		if !sl.Sleep(ctx, time.Duration(d)) {
			return false
		}
		late := clampI(r.now()-asked, 0, maxSlack)
		diff := late - sl.mean
		sl.mean += diff / 8
		sl.dev += (max(diff, -diff) - sl.dev) / 4
	}
	for r.now() < ti {
		runtime.Gosched()
	}
	return ctx.Err() == nil
}

const maxSlack = int64(time.Millisecond)

// pacer is the open loop's wait: a precise sleeper and its running mean
// and deviation of how late wake-ups are, in ns.
type pacer struct {
	*hostclock.Sleeper
	mean, dev int64
}

// lateSendGrace is how long after the window's end an open loop that fell
// behind still sends the window's arrivals.
const lateSendGrace = int64(100 * time.Millisecond)

func clampI(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

func (s *Session) reset(user int, seed uint64) {
	s.User, s.Iteration = user, 0
	clear(s.Vars)
	s.cookies = s.cookies[:0]
	s.pcg.Seed(seed, uint64(user))
}

// closedLoop runs virtual users, as many as the profile says at each
// moment, started no faster than spawn_rate.
func (r *runner) closedLoop(ctx context.Context, cancel context.CancelFunc) {
	var wg sync.WaitGroup
	var users []chan struct{}
	const step = 20 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	spawn := 0.0
	last := r.now()
	stopped := r.mend
	for {
		now := r.now()
		if now >= r.mend {
			break
		}
		want := int(math.Round(levelAt(r.segs, secs(now))))
		if sr := r.cfg.SpawnRate; sr > 0 {
			// The allowance never exceeds one step's worth, so a pause in
			// growth is not followed by a burst.
			spawn = min(spawn+sr*secs(now-last), max(1, sr*step.Seconds()))
		}
		last = now
		for len(users) < want {
			if r.cfg.SpawnRate > 0 {
				if spawn < 1 {
					break
				}
				spawn--
			}
			stop := make(chan struct{})
			id := len(users)
			users = append(users, stop)
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.user(ctx, id, stop)
			}()
		}
		for len(users) > want {
			close(users[len(users)-1])
			users = users[:len(users)-1]
		}
		timer.Reset(time.Duration(min(int64(step), r.mend-now)))
		select {
		case <-timer.C:
			continue
		case <-ctx.Done():
		case <-r.budgetDone:
		}
		stopped = r.now()
		break
	}
	r.stopAt = min(stopped, r.mend)
	r.endWindow(r.stopAt)
	for _, stop := range users {
		close(stop)
	}
	r.drain(&wg, cancel)
}

// user is one virtual user: iterate, think, repeat. Its pacing lag is how
// much later than planned each iteration starts, the plan being the
// previous start plus the iteration's typical latency plus the think time:
// a stalled answer shows up here even though the closed loop's own latency
// hides it (coordinated omission).
func (r *runner) user(ctx context.Context, id int, stop <-chan struct{}) {
	s := newSession(id, r.seed, r.timeout)
	// Think times are waited on a timerfd, as the open loop's arrivals
	// are: a runtime timer can fire a millisecond late in an idle
	// process, which would count as the generator's own lateness.
	// thinkCtx also ends when the user is removed, so that a long think
	// time is cut short; the request in flight keeps ctx and finishes.
	var sl *hostclock.Sleeper
	thinkCtx := ctx
	if r.cfg.ThinkTime > 0 || r.cfg.ThinkMax > 0 {
		sl = hostclock.NewSleeper()
		defer sl.Close()
		var cancel context.CancelFunc
		thinkCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-thinkCtx.Done():
			}
		}()
	}
	prev, plan := int64(-1), int64(0)
	wake, woke := int64(0), int64(0) // when the think time was to end and did
	for it := int64(0); ; it++ {
		select {
		case <-stop:
			return
		default:
		}
		start := r.now()
		if start >= r.mend || ctx.Err() != nil || !r.takeBudget(start) {
			return
		}
		lag := int64(0)
		if prev >= 0 {
			lag = start - (prev + plan)
		}
		// Only a think time schedules a send: without one the next
		// iteration starts when the last answer comes, and the pacing lag
		// is the target's doing, not the generator's.
		r.rec.send(start, lag, woke-wake > lateNs && wake > 0)
		s.Iteration = it
		r.iterate(ctx, s, start)
		think := r.think(s.Rand)
		prev, plan = start, r.rec.ops[r.iterIdx].expectedNs()+int64(think)
		wake, woke = 0, 0
		if think > 0 {
			wake = r.now() + int64(think)
			if !sl.Sleep(thinkCtx, think) {
				return
			}
			woke = r.now()
		}
	}
}

func (r *runner) think(rng *rand.Rand) time.Duration {
	c := &r.cfg
	if c.ThinkTime > 0 {
		return c.ThinkTime.D()
	}
	if c.ThinkMax > 0 {
		return c.ThinkMin.D() + time.Duration(rng.Int64N(int64(c.ThinkMax-c.ThinkMin)+1))
	}
	return 0
}

// iterate runs one iteration for s: every operation in order, or one
// picked by weight, then records the flow. intended is when the
// iteration was meant to start; later steps are meant to start when the
// one before them ends. A failed step ends the iteration, as later steps
// usually need what it would have returned.
func (r *runner) iterate(ctx context.Context, s *Session, intended int64) {
	lo, hi := 0, len(r.t.Ops)
	if r.t.Weighted {
		lo = r.pick(s.Rand.Float64())
		hi = lo + 1
	}
	stepStart, first, end := intended, int64(-1), intended
	class := "ok"
	for i := lo; i < hi; i++ {
		s.sent = time.Time{}
		call := r.now()
		err := r.t.Ops[i].Do(ctx, s)
		end = r.now()
		sent := call
		if !s.sent.IsZero() {
			sent = int64(s.sent.Sub(r.base))
		}
		c := "ok"
		if err != nil {
			c = Classify(err)
			r.rec.example(i+1, c, err)
		}
		r.rec.record(i+1, intended, stepStart, sent, end, c)
		r.complete(i+1, intended, end)
		r.complete(0, intended, end)
		if first < 0 {
			first = sent
		}
		if err != nil {
			class = c
			break
		}
		stepStart = end
	}
	if r.flowIdx > 0 {
		r.rec.record(r.flowIdx, intended, intended, first, end, class)
		r.complete(r.flowIdx, intended, end)
	}
}

func (r *runner) pick(u float64) int {
	x := u * r.cum[len(r.cum)-1]
	for i, c := range r.cum {
		if x < c {
			return i
		}
	}
	return len(r.cum) - 1
}

// drain waits for the requests in flight: up to the request timeout plus a
// second, then cancels them and waits up to two more seconds.
func (r *runner) drain(wg *sync.WaitGroup, cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(r.timeout + time.Second):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}
