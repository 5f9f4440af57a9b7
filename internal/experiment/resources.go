package experiment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
)

// Sampled is one process the sampler reads: which it is, and where its
// counters come from.
type Sampled struct {
	Process deploy.ProcessInfo
	Source  deploy.ResourceSource
}

// ResourceRow is one row of resources.parquet.
type ResourceRow struct {
	TS      float64 `parquet:"t_s"`
	Process string  `parquet:"process"`
	// Role is what the process is for: host, sidecar, node-proxy or
	// loadgen (deploy.Role*), so a mesh's cost can be told apart.
	Role     string  `parquet:"role"`
	PID      int64   `parquet:"pid"`
	CPUS     float64 `parquet:"cpu_s"`
	RSSBytes int64   `parquet:"rss_bytes"`
	// PSSBytes is the proportional set size (deploy.Usage); null where
	// the deployer cannot read it.
	PSSBytes *int64 `parquet:"pss_bytes,optional"`
	// The counters of the process's cgroup; null for a process without
	// one (no deploy.resources and no isolation).
	CFSPeriods       *int64   `parquet:"cfs_periods,optional"`
	ThrottledPeriods *int64   `parquet:"throttled_periods,optional"`
	ThrottledS       *float64 `parquet:"throttled_s,optional"`
	CgroupMemBytes   *int64   `parquet:"cgroup_memory_bytes,optional"`
}

// ResourceSampler reads the CPU time and RSS of a set of processes once per
// interval, through each process's resource source.
type ResourceSampler struct {
	procs    []Sampled
	interval time.Duration

	mu    sync.Mutex
	rows  []ResourceRow
	zero  time.Time // the t_s origin: the start of the measurement
	start time.Time

	follow func() []Sampled // processes that may join (scaling.go)
	joined []deploy.ProcessInfo

	stream   deploy.ResourceStreamer // a deployment that reports samples itself (resources_stream.go)
	streamed map[string]bool         // the processes it reported, by name

	// publish, when set, hands on every sample once it is recorded.
	publish func(p deploy.ProcessInfo, at time.Time, u deploy.Usage)

	running sync.WaitGroup // the sampling goroutines, which Wait outlasts
}

// NewResourceSampler samples procs every interval once Start is called.
func NewResourceSampler(procs []Sampled, interval time.Duration) *ResourceSampler {
	return &ResourceSampler{procs: procs, interval: interval}
}

// Start samples until ctx is done. zero is the time t_s counts from.
func (rs *ResourceSampler) Start(ctx context.Context, zero time.Time) {
	rs.mu.Lock()
	rs.zero = zero
	rs.mu.Unlock()
	if rs.stream != nil {
		rs.running.Go(func() {
			rs.stream.StreamResources(ctx, func(p deploy.ProcessInfo, at time.Time, u deploy.Usage) {
				rs.addStreamed(ctx, p, at, u)
			})
		})
	}
	rs.running.Go(func() { rs.sampleAround(ctx, zero) })
}

// finalSampleWait bounds the sample taken as the measurement ends.
const finalSampleWait = 2 * time.Second

// sampleAround samples now, then on every whole interval counted from
// zero, so that a sample falls at the measurement's start rather than up
// to an interval before it, and once more as ctx ends, so that one falls
// at its end: a window's CPU is then read between samples that bracket
// it, not over a window up to an interval longer than the one whose
// requests it is divided by.
func (rs *ResourceSampler) sampleAround(ctx context.Context, zero time.Time) {
	rs.sample(ctx, time.Now())
	t := time.NewTimer(time.Until(nextTick(time.Now(), zero, rs.interval)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The processes outlive the measurement's context; the last
			// sample needs one of its own.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalSampleWait)
			rs.sample(fctx, time.Now())
			cancel()
			return
		case now := <-t.C:
			rs.sample(ctx, now)
			t.Reset(time.Until(nextTick(time.Now(), zero, rs.interval)))
		}
	}
}

// nextTick is the first time after now that is a whole number of d from
// phase, before or after it.
func nextTick(now, phase time.Time, d time.Duration) time.Time {
	// Truncated toward zero, k lands on the tick at or before now when now
	// is after phase, and on the tick at or after now when it is before.
	k := now.Sub(phase) / d
	next := phase.Add(k * d)
	if !next.After(now) {
		next = next.Add(d)
	}
	return next
}

// Wait returns once the sampling that Start began has ended with its
// context, so that a sample taken as the run stopped is in Rows.
func (rs *ResourceSampler) Wait() { rs.running.Wait() }

// SetZero moves the origin of t_s, for when the measurement starts after
// sampling began (warm-up gets negative times).
func (rs *ResourceSampler) SetZero(zero time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	shift := rs.zero.Sub(zero).Seconds()
	for i := range rs.rows {
		rs.rows[i].TS += shift
	}
	rs.zero = zero
}

// sample takes one sample of every process; Start calls it on every tick.
func (rs *ResourceSampler) sample(ctx context.Context, now time.Time) {
	rs.followNew()
	var rows []ResourceRow
	var read []Sampled
	var usage []deploy.Usage
	for _, p := range rs.procs {
		u, err := p.Source.Sample(ctx)
		if err != nil {
			continue // exited: the run records why elsewhere
		}
		rows = append(rows, rowOf(p.Process, u))
		read, usage = append(read, p), append(usage, u)
	}
	rs.mu.Lock()
	for i := range rows {
		rows[i].TS = now.Sub(rs.zero).Seconds()
	}
	rs.rows = append(rs.rows, rows...)
	rs.mu.Unlock()
	// A watcher sees a sample only once the record holds it.
	if rs.publish != nil {
		for i, p := range read {
			rs.publish(p.Process, now, usage[i])
		}
	}
}

// rowOf is process p's row for reading u; its time is the caller's.
func rowOf(p deploy.ProcessInfo, u deploy.Usage) ResourceRow {
	row := ResourceRow{
		Process:  p.Name,
		Role:     p.Role,
		PID:      int64(p.PID),
		CPUS:     u.CPUSeconds,
		RSSBytes: u.RSSBytes,
	}
	if u.PSSBytes > 0 {
		pss := u.PSSBytes
		row.PSSBytes = &pss
	}
	if c := u.Cgroup; c != nil {
		periods, throttled, mem, ts := int64(c.Periods), int64(c.ThrottledPeriods), c.MemoryBytes, c.ThrottledSeconds
		row.CFSPeriods, row.ThrottledPeriods, row.CgroupMemBytes, row.ThrottledS = &periods, &throttled, &mem, &ts
	}
	return row
}

// Rows returns the samples so far, in time order. A streamed sample
// (resources_stream.go) arrives after the ticks that followed its time;
// the sort is stable, so each process's rows keep their order.
func (rs *ResourceSampler) Rows() []ResourceRow {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rows := slices.Clone(rs.rows)
	slices.SortStableFunc(rows, func(a, b ResourceRow) int { return cmp.Compare(a.TS, b.TS) })
	return rows
}

// WriteParquet writes the samples as resources.parquet.
func (rs *ResourceSampler) WriteParquet(path string) error {
	rows := rs.Rows()
	if err := parquet.WriteFile(path, rows); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CPUSeconds is the CPU time each process used between the first sample at
// or after from and the last sample, keyed by process name.
func CPUSeconds(rows []ResourceRow, from float64) map[string]float64 {
	first := map[string]float64{}
	last := map[string]float64{}
	for _, r := range rows {
		if r.TS < from {
			continue
		}
		if _, ok := first[r.Process]; !ok {
			first[r.Process] = r.CPUS
		}
		last[r.Process] = r.CPUS
	}
	out := map[string]float64{}
	for k, v := range last {
		out[k] = v - first[k]
	}
	return out
}
