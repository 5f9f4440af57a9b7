package hostclock

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// A sentinel is the bare loop run beside a load run, on the generator's
// CPUs and for the run's measurement window, asking the gaps the run's
// generator asks: the floor of that very window. One calibration before
// an experiment cannot judge its runs on a host whose timer lateness
// drifts tenfold from one second to the next, and depends on the gap
// asked (a CPU idle longer sleeps deeper and wakes later).

// Bounds of the gap a sentinel asks: below MinGap the loop would cost a
// share of the generator's core; above MaxGap it takes too few wake-ups
// in a window of seconds for a p99.
const (
	MinGap = 100 * time.Microsecond
	MaxGap = 10 * time.Millisecond
)

// A wake-up is the sentinel's whole cost: on the development VM each one
// costs 30-50 µs of CPU, whatever the loop does (docs/PERFORMANCE.md,
// "The sentinel's cost"). So it takes no more wake-ups than the audit's
// statistics need. sentinelSamples is what it aims for over a window:
// the audit bounds a p99 from 368 samples at 95% (internal/load,
// interval.go), and about 1,000 leave room for wake-ups a busy host
// loses and narrow the interval to a few ranks. restPeriod is the
// shortest period between measured wake-ups whatever the window, so that
// a short one at a high rate wakes at most 2/restPeriod times a second.
const (
	sentinelSamples = 1000
	restPeriod      = 5 * time.Millisecond
)

// restFor is the period between measured wake-ups of a sentinel asking
// gap over a window of d: 0 (measure every wait) when resting would not
// save wake-ups. A rest is itself a wake-up, so a measured wait and its
// rest cost two: resting pays only when the period is over twice the gap.
func restFor(gap, d time.Duration) time.Duration {
	period := max(restPeriod, d/sentinelSamples)
	if period > 2*gap {
		return period
	}
	return 0
}

// MaxSentinel bounds a sentinel's window, so that no wrong value leaves
// one running for days.
const MaxSentinel = 24 * time.Hour

// SentinelOptions shape a sentinel.
type SentinelOptions struct {
	// Gap is the wait asked each time (the run's mean inter-arrival),
	// clamped to [MinGap, MaxGap].
	Gap time.Duration
	// Poisson draws each wait from an exponential distribution of mean
	// Gap (clamped too), as a Poisson open loop asks.
	Poisson bool
	// StartAt is when the window starts (now when zero); Duration is its
	// length. A sentinel that starts late (a slow process start on a busy
	// host) still ends at StartAt + Duration, with the run's window.
	StartAt  time.Time
	Duration time.Duration
}

// ClampGap bounds a gap to what a sentinel asks.
func ClampGap(d time.Duration) time.Duration { return min(max(d, MinGap), MaxGap) }

// Window is what a sentinel reports: its lateness over the window, the
// histogram it was read from (HdrHistogram's compressed base64 form, in
// ns), and what the loop cost.
type Window struct {
	Calibration
	// Histogram is the lateness histogram in ns, V2 compressed, base64.
	Histogram string `json:"histogram,omitempty"`
	// CPUPercent is the sentinel process's own CPU over the window, of
	// one core.
	CPUPercent float64 `json:"cpu_percent"`
	// Poisson says the waits were drawn at random around the gap.
	Poisson bool `json:"poisson,omitempty"`
}

// Sentinel runs the bare loop for the window and summarises it. A
// canceled ctx ends the window early; what was measured until then is
// reported, unless nothing was.
func Sentinel(ctx context.Context, opt SentinelOptions) (Window, error) {
	if opt.Duration <= 0 || opt.Duration > MaxSentinel {
		return Window{}, fmt.Errorf("hostclock: sentinel duration %v: must be in (0, %v]", opt.Duration, MaxSentinel)
	}
	if opt.Gap <= 0 {
		return Window{}, fmt.Errorf("hostclock: sentinel gap %v: must be > 0", opt.Gap)
	}
	gap := ClampGap(opt.Gap)
	if d := time.Until(opt.StartAt); d > 0 {
		if d > time.Hour {
			return Window{}, fmt.Errorf("hostclock: sentinel start %v ahead: more than an hour", d.Round(time.Second))
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Window{}, fmt.Errorf("hostclock: sentinel interrupted before its window: %w", ctx.Err())
		}
	}
	s := newQuietSleeper()
	defer s.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	cpu0 := ProcessCPU()
	start := time.Now()
	end := start.Add(opt.Duration)
	if !opt.StartAt.IsZero() {
		end = opt.StartAt.Add(opt.Duration)
	}
	h := bareLoop(ctx, s, end, MinGap, restFor(gap, end.Sub(start)), func(int64) time.Duration {
		if !opt.Poisson {
			return gap
		}
		return ClampGap(time.Duration(rng.ExpFloat64() * float64(gap)))
	})
	el := time.Since(start)
	if h.TotalCount() == 0 {
		if err := ctx.Err(); err != nil {
			return Window{}, fmt.Errorf("hostclock: sentinel interrupted: %w", err)
		}
		return Window{}, fmt.Errorf("hostclock: sentinel took no sample in %v", opt.Duration)
	}
	w := Window{Calibration: summarize(h), Poisson: opt.Poisson}
	w.Method = s.Method() + " sentinel"
	w.DurationS = el.Seconds()
	w.IntervalsUs = []float64{float64(gap) / 1e3}
	w.GOMAXPROCS = runtime.GOMAXPROCS(0)
	if el > 0 {
		w.CPUPercent = 100 * (ProcessCPU() - cpu0).Seconds() / el.Seconds()
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return Window{}, fmt.Errorf("hostclock: sentinel histogram: %w", err)
	}
	w.Histogram = string(b)
	return w, nil
}

// Summary reads a sentinel's histogram back, so that the figures a run is
// judged by come from the histogram itself, not the sentinel's say.
func (w Window) Summary() (Calibration, error) {
	h, err := hdr.Decode([]byte(w.Histogram))
	if err != nil {
		return Calibration{}, fmt.Errorf("hostclock: sentinel histogram: %w", err)
	}
	if h.TotalCount() == 0 {
		return Calibration{}, errors.New("hostclock: sentinel histogram is empty")
	}
	c := summarize(h) // keeps h, for the audit's intervals
	c.Method, c.DurationS, c.IntervalsUs, c.GOMAXPROCS = w.Method, w.DurationS, w.IntervalsUs, w.GOMAXPROCS
	return c, nil
}

// SentinelExecutable is the binary a load run starts as `svclab hostclock
// --sentinel` (load.Options.Sentinel): the running svclab, or "" when it
// is not known. A Go test binary is not svclab: started with these
// arguments it would run its own tests again, so it gets "" (a test that
// wants a sentinel passes a binary that serves SentinelMain).
func SentinelExecutable() string {
	exe, err := os.Executable()
	if err != nil || strings.HasSuffix(filepath.Base(exe), ".test") {
		return ""
	}
	return exe
}

// MainIfAsked runs a sentinel and exits when this process was started as
// one, `BINARY hostclock --sentinel ...`; otherwise it returns at once.
// It is for test binaries that stand in for svclab as a run's sentinel
// (their TestMain calls it first).
func MainIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != "hostclock" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := SentinelMain(ctx, os.Args[2:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// SentinelArgs is the command line, after the binary's name, that runs a
// sentinel as `svclab hostclock --sentinel ...` (SentinelMain reads it).
func SentinelArgs(opt SentinelOptions) []string {
	args := []string{"hostclock", "--sentinel", "--gap", opt.Gap.String(), "--duration", opt.Duration.String()}
	if !opt.StartAt.IsZero() {
		args = append(args, "--start-at", strconv.FormatInt(opt.StartAt.UnixNano(), 10))
	}
	if opt.Poisson {
		args = append(args, "--poisson")
	}
	return args
}

// SentinelMain runs a sentinel from the arguments SentinelArgs makes (the
// ones after "hostclock") and writes its Window as one JSON line on
// stdout. It is the whole of the hidden `svclab hostclock` command, kept
// here so that tests can run it in a process of their own.
func SentinelMain(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("svclab hostclock", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sentinel := fs.Bool("sentinel", false, "run the bare timer loop beside a load run")
	gap := fs.Duration("gap", 0, "the wait asked")
	dur := fs.Duration("duration", 0, "the window's length")
	startAt := fs.Int64("start-at", 0, "the window's start, Unix time in ns")
	poisson := fs.Bool("poisson", false, "draw the waits at random around the gap")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("hostclock: %w", err)
	}
	if !*sentinel || fs.NArg() > 0 {
		return errors.New("hostclock: usage: svclab hostclock --sentinel --gap D --duration D [--start-at NS] [--poisson]")
	}
	// One P: the loop is one goroutine, and a second P only adds a
	// spinning thread's wake-up to each of the loop's.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	opt := SentinelOptions{Gap: *gap, Duration: *dur, Poisson: *poisson}
	if *startAt != 0 {
		opt.StartAt = time.Unix(0, *startAt)
	}
	w, err := Sentinel(ctx, opt)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(w)
}

// ProcessCPU is the CPU time the calling process has used, user and
// system.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
