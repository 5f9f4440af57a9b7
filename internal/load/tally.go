package load

import (
	"maps"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Tally is a run's measurement so far, summed from its seconds (Progress,
// every generator's merged) as they come: the summary a live view judges
// the thresholds on while the run goes. Its total's count, errors and
// latency are the result's once the last second is in; its rates are the
// requests so far over the time measured so far.
type Tally struct {
	lat           *hdr.Histogram
	count, errors int64
	classes       map[string]int64
	elapsed       time.Duration
}

// NewTally is a tally of no second yet.
func NewTally() *Tally { return &Tally{lat: newHist()} }

// Add counts one second; a second of the warm-up is not measured.
func (t *Tally) Add(p Progress) {
	if p.Warmup {
		return
	}
	if p.Latency != nil {
		t.lat.Merge(p.Latency)
	}
	t.count += p.Requests
	t.errors += p.Errors
	t.classes = maps.Clone(p.ErrorClasses)
	t.elapsed = p.Elapsed
}

// Summary is the measurement so far as a summary of one operation,
// "total": the per-operation figures come with the result only.
func (t *Tally) Summary() Summary {
	op := Operation{Name: "total", Kind: "total", Count: t.count, Errors: t.errors,
		ErrorsByClass: maps.Clone(t.classes), Latency: stats(t.lat)}
	if s := t.elapsed.Seconds(); s > 0 {
		op.RPS = float64(t.count) / s
		op.CompletedRPS = op.RPS
	}
	return Summary{DurationS: t.elapsed.Seconds(), Operations: []Operation{op}}
}
