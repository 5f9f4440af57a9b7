package load

import (
	"fmt"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/gonum/stat/distuv"
)

// The audit judges a send-lag percentile by confidence intervals, not by
// comparing two point estimates with a fixed margin: with ~1,200 sends a
// p99.9 is the one or two largest values, and comparing it with another
// noisy p99.9 flags noise. An interval from order statistics holds
// whatever the distribution (lateness is anything but normal), and says
// honestly when there are too few samples to bound a percentile at all.

// lagConfidence is each interval's confidence. The verdict asks that two
// such intervals do not overlap, which holds by chance far less often
// than 5% of the time.
const lagConfidence = 0.95

// QuantileCI is a distribution-free confidence interval for a quantile:
// the order statistics X(lo) ≤ ξq ≤ X(hi) of n samples, whose ranks come
// from the Binomial(n, q) distribution of how many samples fall below ξq.
type QuantileCI struct {
	N int64 `json:"n"`
	// LoRank and HiRank are 1-based ranks in the sorted samples.
	LoRank int64 `json:"lo_rank"`
	HiRank int64 `json:"hi_rank"`
	// LoMs and HiMs are those order statistics read from the histogram:
	// the lowest value of LoRank's bucket and the highest of HiRank's, so
	// the histogram's rounding only widens the interval.
	LoMs float64 `json:"lo_ms"`
	HiMs float64 `json:"hi_ms"`
	// Coverage is the interval's exact coverage, at least the confidence
	// asked (the ranks are whole, so it is rarely equal).
	Coverage float64 `json:"coverage"`
}

// quantileRanks returns the equal-tailed order-statistic ranks of a
// confidence interval for the q-quantile of n samples: lo, the largest
// rank with P(B ≤ lo−1) ≤ α/2, and hi, the smallest with P(B ≤ hi−1) ≥
// 1−α/2, where B ~ Binomial(n, q) counts the samples below the quantile.
// In scipy's terms lo = binom.ppf(α/2, n, q) and hi = binom.ppf(1−α/2,
// n, q) + 1. ok is false when no such ranks lie within 1..n: too few
// samples to bound that quantile at that confidence.
func quantileRanks(n int64, q, conf float64) (lo, hi int64, coverage float64, ok bool) {
	if n <= 0 || !(q > 0 && q < 1) || !(conf > 0 && conf < 1) {
		return 0, 0, 0, false
	}
	b := distuv.Binomial{N: float64(n), P: q}
	alpha := 1 - conf
	lo = binomPPF(b, n, alpha/2)
	hi = binomPPF(b, n, 1-alpha/2) + 1
	if lo < 1 || hi > n {
		return lo, hi, 0, false
	}
	return lo, hi, b.CDF(float64(hi-1)) - b.CDF(float64(lo-1)), true
}

// binomPPF is the smallest k in [0, n] with CDF(k) ≥ p (gonum's Binomial
// has a CDF but no quantile function). A bisection: at most 64 steps.
func binomPPF(b distuv.Binomial, n int64, p float64) int64 {
	lo, hi := int64(0), n
	for lo < hi {
		mid := lo + (hi-lo)/2
		if b.CDF(float64(mid)) >= p {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// quantileCI is the interval for the q-quantile of h, whose values are in
// units of unitMs milliseconds (1e-3 for µs, 1e-6 for ns). ok is false
// when h has too few samples for it.
func quantileCI(h *hdr.Histogram, unitMs, q, conf float64) (QuantileCI, bool) {
	n := h.TotalCount()
	lo, hi, cov, ok := quantileRanks(n, q, conf)
	ci := QuantileCI{N: n, LoRank: lo, HiRank: hi, Coverage: cov}
	if !ok {
		return ci, false
	}
	lov, hiv := ranksToValues(h, lo, hi)
	ci.LoMs, ci.HiMs = float64(lov)*unitMs, float64(hiv)*unitMs
	return ci, true
}

// ranksToValues reads the order statistics of ranks lo ≤ hi (1-based)
// from h's buckets: the lowest value of lo's bucket, the highest of hi's.
func ranksToValues(h *hdr.Histogram, lo, hi int64) (int64, int64) {
	var seen int64
	var lov int64 = -1
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		seen += bar.Count
		if lov < 0 && seen >= lo {
			lov = bar.From
		}
		if seen >= hi {
			return lov, bar.To
		}
	}
	return max(lov, 0), h.Max()
}

// minSamplesFor is the fewest samples with which quantileRanks bounds the
// q-quantile at conf: what a percentile that was not judged lacked.
// Bounded: it looks no further than maxN.
func minSamplesFor(q, conf float64, maxN int64) int64 {
	lo, hi := int64(1), maxN
	if _, _, _, ok := quantileRanks(hi, q, conf); !ok {
		return -1
	}
	// ok is monotone in n for the quantiles judged here: more samples
	// never lose the interval.
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, _, _, ok := quantileRanks(mid, q, conf); ok {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// lagSlackMs is how far the send lag's interval must clear the floor's
// before it counts as later than the host allowed. The bare loop notes
// its wake-up at once; the generator's send passes a few more steps after
// its wake-up (a clock read, the budget and the recorder's lock, a
// Gosched that hands the CPU to the worker), and the Go scheduler that
// runs the woken goroutine parks idle threads in epoll and futex waits,
// which the kernel may defer by a thread's timer slack, 50 µs by default
// (prctl PR_GET_TIMERSLACK). Lag differences within that are the timers'
// and the clocks' resolution, not evidence of a generator falling behind.
const lagSlackMs = 0.05

// LagInterval is one percentile of the send lag as the audit judged it:
// run.json's generator.floor.intervals.
type LagInterval struct {
	// Percentile is 99 or 99.9.
	Percentile float64 `json:"percentile"`
	Confidence float64 `json:"confidence"`
	// Lag and Floor are the intervals of the send lag and of the bare
	// loop it was judged against; absent when there were too few samples.
	Lag   *QuantileCI `json:"lag,omitempty"`
	Floor *QuantileCI `json:"floor,omitempty"`
	// SlackMs is lagSlackMs.
	SlackMs float64 `json:"slack_ms"`
	// Judged says both intervals existed; Beyond that the lag's lay
	// wholly above the floor's plus SlackMs.
	Judged bool `json:"judged"`
	Beyond bool `json:"beyond"`
	// Note says why a percentile was not judged.
	Note string `json:"note,omitempty"`
}

// judgeLagPercentile compares the p-th percentile (e.g. 99.9) of the send
// lag (µs) with the floor's (ns).
func judgeLagPercentile(lag, floor *hdr.Histogram, p float64) LagInterval {
	q := p / 100
	li := LagInterval{Percentile: p, Confidence: lagConfidence, SlackMs: lagSlackMs}
	lci, lok := quantileCI(lag, 1e-3, q, lagConfidence)
	fci, fok := quantileCI(floor, 1e-6, q, lagConfidence)
	if lok {
		li.Lag = &lci
	}
	if fok {
		li.Floor = &fci
	}
	var short []string
	if !lok {
		short = append(short, fmt.Sprintf("%d sends", lci.N))
	}
	if !fok {
		short = append(short, fmt.Sprintf("%d wake-ups of the timer loop", fci.N))
	}
	if len(short) > 0 {
		need := minSamplesFor(q, lagConfidence, 1<<24)
		li.Note = fmt.Sprintf("%s not judged: %s too few at %s (an interval needs %d)",
			pName(p), joinAnd(short), pct(lagConfidence), need)
		return li
	}
	li.Judged = true
	li.Beyond = lci.LoMs > fci.HiMs+lagSlackMs
	return li
}

func pName(p float64) string { return "p" + trimFloat(p) }

func pct(c float64) string { return trimFloat(100*c) + "%" }

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}

func joinAnd(s []string) string {
	if len(s) == 2 {
		return s[0] + " and " + s[1]
	}
	return s[0]
}
