package load

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/warn"
)

// A warm-up by calls (load.warmup_calls) is a closed loop of back-to-back
// iterations run before the load proper, until that many have completed
// or load.warmup has passed, whichever comes first; then the open (or
// closed) loop starts and its measurement at once. A JIT compiler warms up
// by calls, and a closed loop never offers more than the system serves:
// a warm-up at a fixed rate ahead of expensive calls (S3's LargeSize cells)
// leaves a queue that spills into the measured window.

// DefaultWarmupUsers is how many users run a warm-up by calls when
// load.warmup_users is left out: one, back to back, as JMH's warm-up
// iterations are, so that the warm-up never queues.
const DefaultWarmupUsers = 1

// Warmup is what a warm-up by calls did: run.json's "warmup".
type Warmup struct {
	// Calls counts the iterations (a request, or a flow) that completed,
	// errors included; Errors those of them that failed.
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	// TargetCalls and Users are load.warmup_calls and load.warmup_users.
	TargetCalls int64 `json:"target_calls"`
	Users       int   `json:"users"`
	// DurationS is how long it took; BoundS is load.warmup, its limit.
	DurationS float64 `json:"duration_s"`
	BoundS    float64 `json:"bound_s"`
	// CutByTime is set when load.warmup ended it before TargetCalls
	// calls had completed.
	CutByTime bool `json:"cut_by_time"`
}

// Warning is run.json's warning for a warm-up cut by its time bound;
// false when it ran whole.
func (w *Warmup) Warning() (warn.Warning, bool) {
	if w == nil || !w.CutByTime {
		return warn.Warning{}, false
	}
	return warn.Newf(warn.WarmupCut, "%d of load.warmup_calls = %d calls completed in load.warmup = %gs; the measurement may start cold (raise load.warmup or load.warmup_users)",
		w.Calls, w.TargetCalls, w.BoundS), true
}

// MeasureStart is when the measurement window of the run began: after
// the warm-up by calls when there was one, else warmup after Started.
func (r *Result) MeasureStart(warmup time.Duration) time.Time {
	if r.Warmup != nil {
		return r.Started.Add(time.Duration(r.Warmup.DurationS * float64(time.Second)))
	}
	return r.Started.Add(warmup)
}

// checkWarmupCalls validates load.warmup_calls and load.warmup_users.
func (c *Config) checkWarmupCalls() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &spec.KeyError{Key: "load." + key, Msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case c.WarmupCalls < 0:
		bad("warmup_calls", "must be >= 0, got %d", c.WarmupCalls)
	case c.WarmupCalls > 0 && c.Warmup <= 0:
		bad("warmup_calls", "needs load.warmup as its time bound (the warm-up ends after %d calls or load.warmup, whichever comes first), got no warmup", c.WarmupCalls)
	case c.WarmupCalls > 0 && c.WarmupRate != 0:
		bad("warmup_calls", "set either warmup_calls (a closed loop of back-to-back calls) or warmup_rate (a warm-up at a fixed rate), not both")
	case c.WarmupCalls > 0 && c.Generators != nil && *c.Generators > 1:
		bad("warmup_calls", "runs in one generator only, got load.generators = %d", *c.Generators)
	}
	switch {
	case c.WarmupUsers < 0:
		bad("warmup_users", "must be >= 0, got %d", c.WarmupUsers)
	case c.WarmupUsers > MaxUsers:
		bad("warmup_users", "must be at most %d, got %d", MaxUsers, c.WarmupUsers)
	case c.WarmupUsers > 0 && c.WarmupCalls == 0:
		bad("warmup_users", "applies to a warm-up by calls only: set load.warmup_calls too")
	}
	return errs
}

// callWarmup is a warm-up by calls as a run plans it.
type callWarmup struct {
	calls int64
	users int
	bound time.Duration
}

// takeCallWarmup returns the warm-up by calls cfg asks for, or nil, and
// then clears cfg.Warmup: the loop that follows measures from its start.
func takeCallWarmup(cfg *Config) *callWarmup {
	if cfg.WarmupCalls <= 0 {
		return nil
	}
	w := &callWarmup{calls: cfg.WarmupCalls, users: cfg.WarmupUsers, bound: cfg.Warmup.D()}
	if w.users == 0 {
		w.users = DefaultWarmupUsers
	}
	w.users = int(min(int64(w.users), w.calls))
	cfg.Warmup = 0
	return w
}

// warmUp runs r's warm-up by calls, reporting progress once a second.
// Nothing it does is recorded: the recorder's clock starts after it.
// It returns when the calls are done or the bound has passed, and the
// calls in flight then have ended (each within the request timeout);
// its error is ctx's.
func (r *runner) warmUp(ctx context.Context) (*Warmup, error) {
	w := r.warmup
	start := time.Now()
	deadline := start.Add(w.bound)
	var left, done, errs atomic.Int64
	left.Store(w.calls)
	lat := hdr.New(1, int64(time.Minute/time.Microsecond), 3)
	var mu sync.Mutex // guards lat
	var sec struct{ n, errs atomic.Int64 }

	// Calls in flight at the bound run on to their end; callCtx ends
	// them only when the caller's ctx ends.
	var wg sync.WaitGroup
	for u := range w.users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newSession(u, r.seed, r.timeout)
			for it := int64(0); time.Now().Before(deadline) && ctx.Err() == nil; it++ {
				if left.Add(-1) < 0 {
					return
				}
				s.Iteration = it
				t0 := time.Now()
				ok := r.warmIterate(ctx, s)
				d := time.Since(t0)
				done.Add(1)
				sec.n.Add(1)
				if !ok {
					errs.Add(1)
					sec.errs.Add(1)
				}
				mu.Lock()
				_ = lat.RecordValue(max(d.Microseconds(), 1))
				mu.Unlock()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := start
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-ctx.Done():
			<-finished // each call ends with ctx
			break loop
		case now := <-tick.C:
			mu.Lock()
			p := Progress{Elapsed: now.Sub(deadline), Warmup: true,
				Requests: sec.n.Swap(0), Errors: sec.errs.Swap(0),
				P50: time.Duration(lat.ValueAtQuantile(50)) * time.Microsecond,
				P99: time.Duration(lat.ValueAtQuantile(99)) * time.Microsecond}
			lat.Reset()
			mu.Unlock()
			p.RPS = float64(p.Requests) / now.Sub(last).Seconds()
			last = now
			r.progress(p)
		}
	}
	rec := &Warmup{Calls: done.Load(), Errors: errs.Load(), TargetCalls: w.calls, Users: w.users,
		DurationS: time.Since(start).Seconds(), BoundS: w.bound.Seconds()}
	rec.CutByTime = rec.Calls < w.calls && ctx.Err() == nil
	return rec, ctx.Err()
}

// warmIterate runs one iteration as iterate does, recording nothing, and
// reports whether every step succeeded.
func (r *runner) warmIterate(ctx context.Context, s *Session) bool {
	lo, hi := 0, len(r.t.Ops)
	if r.t.Weighted {
		lo = r.pick(s.Rand.Float64())
		hi = lo + 1
	}
	for i := lo; i < hi; i++ {
		if err := r.t.Ops[i].Do(ctx, s); err != nil {
			return false
		}
	}
	return true
}
