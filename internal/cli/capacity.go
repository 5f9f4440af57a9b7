package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/svclab/svclab/internal/capacity"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/live"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/spec"
)

func init() { rootCmd.AddCommand(newCapacityCmd()) }

// capacityOptions are the flags of `svclab capacity`.
type capacityOptions struct {
	slos     []string
	sets     []string
	out      string
	settings capacity.Settings
	step     time.Duration
	warmup   time.Duration
	cooldown time.Duration
	quiet    bool
	// allowRemote lets load.target name another machine.
	allowRemote bool
	ui          uiOptions
	view        *uiView
}

func newCapacityCmd() *cobra.Command {
	o := &capacityOptions{}
	c := &cobra.Command{
		Use:   "capacity <spec.toml> --slo KEY=VALUE [--slo KEY=VALUE ...]",
		Short: "Find the highest open-loop rate a deployment sustains within SLOs",
		Long: `capacity deploys one variant of a spec (as 'svclab up' does: factors are not
expanded) and drives it with short constant-rate open-loop steps to find the
highest rate it sustains within the SLOs, the knee of its latency curve.

The search brackets the knee, doubling the rate from --start while steps pass
(halving it while they fail), then halves the interval between the highest
passing and the lowest failing rate until it is within --precision, then runs
the answer --confirm more times; a failed confirmation makes it the new top.
A step is cut short as soon as its figures so far break an SLO whatever the
rest of the step brings; a step that fails at its full length is run again
(--retry) before its rate counts as failed, as one outlier decides the p99
of a short step. The search stops early, and says so, when the load
generator itself was the bottleneck of a step.

SLOs are thresholds of [load.thresholds] on all requests together, by the
same keys: p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, mean_ms,
error_rate, min_rps. The spec's own [load.thresholds] count too; --slo
overrides the same key. A step also fails when arrivals were dropped
(load.max_inflight) or nothing was answered.

It prints a line per step and the answer with its interval; -o writes them
as JSON (the rate in "rate"; see docs/CAPACITY.md) and a PNG of latency
against offered load beside it.

Exit status: 0 when the search ended with an answer (however it stopped; the
stop reason is printed); 1 when even the lowest rate broke an SLO, or the
deployment failed; 2 for bad flags or settings, checked before anything
starts.`,
		Example: `  svclab capacity experiments/chain.toml --slo p99_ms=50
  svclab capacity experiments/chain.toml --slo p99_ms=20 --slo error_rate=0.01 -o capacity.json
  svclab capacity --set deploy.transport=http --start 500 --step 3s experiments/select.toml --slo p99_ms=10`,
		Args: exactArgs(1, "give the spec file, e.g. svclab capacity experiments/chain.toml --slo p99_ms=50"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.checkGiven(cmd.Flags()); err != nil {
				return usageError{err}
			}
			err := o.run(cmd.Context(), args[0], cmd.Flags().Changed("start"), cmd.OutOrStdout(), cmd.ErrOrStderr())
			o.view.stop(err)
			return err
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.slos, "slo", nil, "an SLO as KEY=VALUE, a key of [load.thresholds]: p99_ms=50, error_rate=0.01 ... (repeatable)")
	addSetFlag(c, &o.sets)
	f.StringVarP(&o.out, "output", "o", "", "write the answer, every step and the SLOs as JSON here, and the plot beside it (FILE.png)")
	f.Float64Var(&o.settings.Start, "start", 0, "first rate tried, arrivals per second (default: the spec's load.rate, or 50)")
	f.Float64Var(&o.settings.Max, "max-rate", 0, fmt.Sprintf("highest rate tried (default %d)", load.MaxRate))
	f.Float64Var(&o.settings.Min, "min-rate", 0, "lowest rate tried when the first ones fail (default: start/1000)")
	f.Float64Var(&o.settings.Growth, "growth", capacity.DefaultGrowth, "factor between the rates of the bracketing steps")
	f.Float64Var(&o.settings.Precision, "precision", capacity.DefaultPrecision, "stop narrowing once (high-low)/low is at most this")
	f.IntVar(&o.settings.Confirm, "confirm", capacity.DefaultConfirm, "how many more runs the answer must pass (0: none)")
	f.IntVar(&o.settings.Retry, "retry", capacity.DefaultRetry, "how many times a step that failed at its full length is run again before its rate counts as failed (0: none)")
	f.IntVar(&o.settings.MaxSteps, "max-steps", capacity.DefaultMaxSteps, "most steps the whole search may run")
	f.DurationVar(&o.step, "step", 5*time.Second, "measurement of each step")
	f.DurationVar(&o.warmup, "warmup", time.Second, "warm-up at the step's rate before each measurement")
	f.DurationVar(&o.cooldown, "cooldown", time.Second, "pause between steps; after a failed step the pause lasts as long as its load did, at least")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no live line during a step (the line per step is still printed)")
	addAllowRemoteFlag(c, &o.allowRemote)
	o.ui.addFlags(f)
	return c
}

// checkGiven refuses a search setting given a value that capacity.Settings
// reads as unset (a zero, or for a count a negative number meaning none):
// --precision 0 would search to 5 % and --confirm -1 confirm nothing,
// neither what was asked.
func (o *capacityOptions) checkGiven(fs *pflag.FlagSet) error {
	st := o.settings
	for _, f := range []struct {
		flag  string
		unset bool
		want  string
	}{
		{"max-rate", st.Max == 0, fmt.Sprintf("must be a rate > 0, at most %d", load.MaxRate)},
		{"min-rate", st.Min == 0, "must be a rate > 0"},
		{"growth", st.Growth == 0, "must be > 1"},
		{"precision", st.Precision == 0, "must be above 0 and below 1 (a share of the rate)"},
		{"max-steps", st.MaxSteps == 0, "must be at least 2"},
		{"confirm", st.Confirm < 0, "must be >= 0 (0: none)"},
		{"retry", st.Retry < 0, "must be >= 0 (0: none)"},
	} {
		if f.unset && fs.Changed(f.flag) {
			return fmt.Errorf("--%s: %s, got %s", f.flag, f.want, fs.Lookup(f.flag).Value)
		}
	}
	return nil
}

// sloFlag is one --slo KEY=VALUE, read.
type sloFlag struct {
	key, raw string
	value    float64
}

func (s sloFlag) flag() string { return "--slo " + s.key + "=" + s.raw }

// parseSLOs reads the --slo flags and checks their values as the
// thresholds of a [load] table are checked, so that each error names the
// flag; the spec's own thresholds are checked with the spec.
func parseSLOs(flags []string) ([]sloFlag, error) {
	keys := capacity.SLOKeys()
	var out []sloFlag
	table, err := spec.ParseTable("", nil, "load")
	if err != nil {
		return nil, err
	}
	for _, f := range flags {
		key, raw, ok := strings.Cut(f, "=")
		key, raw = strings.TrimSpace(key), strings.TrimSpace(raw)
		if !ok || key == "" {
			return nil, fmt.Errorf("--slo %s: write KEY=VALUE, e.g. --slo p99_ms=50", spec.Echo(f))
		}
		if !slices.Contains(keys, key) {
			return nil, fmt.Errorf("--slo %s: unknown SLO %s; the keys are those of [load.thresholds]: %s", spec.Echo(f), spec.Echo(key), strings.Join(keys, ", "))
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("--slo %s: must be a number, got %s", spec.Echo(f), spec.Echo(raw))
		}
		s := sloFlag{key: key, raw: raw, value: v}
		if i := slices.IndexFunc(out, func(o sloFlag) bool { return o.key == key }); i >= 0 {
			return nil, fmt.Errorf("%s and %s: one value per SLO", out[i].flag(), s.flag())
		}
		if err := table.SetValue("load.thresholds."+key, v); err != nil {
			return nil, fmt.Errorf("%s: %w", s.flag(), err)
		}
		out = append(out, s)
	}
	// Each error about a threshold names the --slo that gave it, whether
	// decoding (nan) or validation (a negative latency) found it.
	by := setters{}
	for _, s := range out {
		by["load.thresholds."+s.key] = setter{name: s.flag()}
	}
	var cfg load.Config
	if err := table.Decode("load", &cfg); err != nil {
		return nil, by.name(err, nil)
	}
	cfg.Rate = 1 // the table holds thresholds only; the rate is the search's
	if err := cfg.Validate(); err != nil {
		return nil, by.name(err, nil)
	}
	return out, nil
}

// prepare reads the spec with the SLOs in its [load.thresholds] and
// returns the variant to deploy and the SLOs.
func (o *capacityOptions) prepare(path string, startGiven bool) (*experiment.Prepared, []string, error) {
	slos, err := parseSLOs(o.slos)
	if err != nil {
		return nil, nil, usageError{err}
	}
	s, err := loadSpec(path, o.sets, true)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if n := len(s.Experiment.Factors); n > 0 {
		notes = append(notes, fmt.Sprintf("the spec's %d factor(s) are not expanded: the search runs on the spec as written (choose levels with --set)", n))
	}
	for _, sl := range slos {
		if err := s.SetValue("load.thresholds."+sl.key, sl.value); err != nil {
			return nil, nil, usageError{fmt.Errorf("%s: %w", sl.flag(), err)}
		}
	}
	// The search sets the rate of every step; a spec without one (a
	// closed loop, stages) is still a variant to deploy.
	_, hasRate := s.Lookup("load.rate")
	if mode, _ := s.Lookup("load.mode"); mode != string(load.Closed) && !hasRate {
		if _, staged := s.Lookup("load.stages"); !staged {
			if err := s.SetValue("load.rate", 1.0); err != nil {
				return nil, nil, err
			}
		}
	}
	var remote error
	if !o.allowRemote {
		remote = experiment.CheckRemote(s, false)
	}
	pr, err := experiment.Prepare(s)
	if err := spec.Join(remote, err); err != nil {
		return nil, nil, err
	}
	if pr.Load.Thresholds == nil || len(pr.Load.Thresholds.Check(load.Summary{})) == 0 {
		return nil, nil, usageError{fmt.Errorf("--slo: give at least one SLO, e.g. --slo p99_ms=50 (keys: %s), or write them in the spec's [load.thresholds]", strings.Join(capacity.SLOKeys(), ", "))}
	}
	if !startGiven {
		o.settings.Start = 50
		if hasRate && pr.Load.Mode != load.Closed && pr.Load.Rate > 0 {
			o.settings.Start = pr.Load.Rate
		}
	}
	// The flags default to the settings' defaults; 0 given means none,
	// which Settings spells as a negative count.
	for _, n := range []*int{&o.settings.Confirm, &o.settings.Retry} {
		if *n == 0 {
			*n = -1
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
		min  time.Duration
	}{{"--step", o.step, 500 * time.Millisecond}, {"--warmup", o.warmup, 0}, {"--cooldown", o.cooldown, 0}} {
		if d.v < d.min {
			return nil, nil, usageError{fmt.Errorf("%s: must be at least %s, got %s", d.flag, d.min, d.v)}
		}
	}
	return pr, notes, nil
}

func (o *capacityOptions) run(ctx context.Context, path string, startGiven bool, stdout, stderr io.Writer) error {
	pr, notes, err := o.prepare(path, startGiven)
	if err != nil {
		return err
	}
	if o.view, err = o.ui.start(stderr, live.Experiment{Command: "capacity", Name: path}); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "svclab capacity:", n)
	}
	if o.out != "" && o.out != "-" {
		if err := writable(o.out); err != nil {
			return usageError{fmt.Errorf("-o %s: %w", o.out, err)}
		}
		if err := writable(plotPath(o.out)); err != nil {
			return usageError{fmt.Errorf("-o %s: its plot %s: %w", o.out, plotPath(o.out), err)}
		}
	}
	slo := pr.Load.Thresholds
	// Check the settings before deploying anything.
	if _, err := o.settings.Resolve(); err != nil {
		return usageError{settingsError(err)}
	}

	fmt.Fprintf(stderr, "capacity of %s: SLOs %s; steps of %s warm-up + %s from %s/s\n", path, capacity.DescribeSLOs(slo), o.warmup, o.step, strconv.FormatFloat(o.settings.Start, 'f', -1, 64))
	// The search is judged by the same instrument as svclab run: with
	// experiment.isolation, the generator and the deployment get their own
	// CPUs, or a generator_bottleneck stop on a shared core is all it finds.
	iso, err := experiment.DecideIsolation(pr.Spec, stderr)
	if err != nil {
		return err
	}
	leave, err := iso.Enter()
	if err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	defer func() { _ = leave() }()
	started := time.Now()
	// A process that exits ends the trial's context, and so the search:
	// what comes after measures another system.
	trial, err := experiment.StartPrepared(ctx, pr, &iso)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	defer trial.Stop()
	go o.view.watchDeployment(trial.Context(), trial.Deployment)
	target, err := trial.Target(pr)
	if err != nil {
		return fmt.Errorf("load target: %w", err)
	}
	if target == nil {
		return fmt.Errorf("load target: deploy.deployer = %q runs the load itself, where svclab capacity cannot drive it step by step", pr.Spec.Deploy.Deployer)
	}
	if target.Close != nil {
		defer target.Close()
	}

	base, out, serr := o.search(ctx, trial, pr, target, stderr)
	if out == nil {
		return serr
	}
	f := capacity.NewFile(out, pr.Load.Thresholds)
	f.Settings.Arrival = string(base.Arrival)
	f.Spec, f.Overrides = path, pr.Spec.Overrides
	f.Isolated = iso.DeployCPUs() != ""
	f.Started = started.UTC().Format(time.RFC3339)
	return o.finish(ctx, f, out, serr, stdout, stderr)
}

// search runs the capacity search on target, a target of the trial's
// deployment, with steps of pr's load at the rates the search asks for;
// it returns the steps' load and the outcome, nil when it failed first.
func (o *capacityOptions) search(ctx context.Context, trial *experiment.Trial, pr *experiment.Prepared, target *load.Target, stderr io.Writer) (load.Config, *capacity.Outcome, error) {
	slo := pr.Load.Thresholds
	live := false
	if f, ok := stderr.(*os.File); ok && !o.quiet {
		live = term.IsTerminal(int(f.Fd()))
	}
	base := pr.Load
	base.Mode, base.Users, base.Stages, base.Requests = load.Open, 0, nil, 0
	base.Duration, base.Warmup = load.Duration(o.step), load.Duration(o.warmup)
	// pause is the rest before the next step. After a failed step it is
	// as long as that step's load lasted: a queue built at rate λ over a
	// deployment serving μ for d seconds drains in (λ-μ)·d/μ <= d at rest
	// while λ <= 2μ, which the bracket's doubling keeps.
	var pause time.Duration
	var progress func(float64, load.Progress)
	if live {
		progress = func(rate float64, p load.Progress) {
			fmt.Fprintf(stderr, "\r\033[K  %s/s: %s", capacity.FormatRate(rate), p)
		}
	}
	// One calibration serves every step: the deployment is up and idle, as
	// it is between steps.
	// Each step's window gets its own timer loop beside it.
	audit := load.Options{HostTimer: calibrateHost(ctx, o.quiet, stderr), Sentinel: hostclock.SentinelExecutable()}
	drive := capacity.LoadStep(base, target, slo, audit, o.view.stepProgress(progress))
	step := func(ctx context.Context, rate float64) (capacity.Measurement, error) {
		if pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
		m, err := capacity.Measurement{}, context.Cause(ctx)
		if ctx.Err() == nil {
			m, err = drive(ctx, rate)
		}
		if crash := trial.Crash(); crash != nil {
			err = experiment.CrashError(crash, "the search")
		}
		return m, err
	}
	report := func(s capacity.Step, out *capacity.Outcome) {
		pause = o.cooldown
		if !s.Pass {
			pause = max(pause, o.warmup+time.Duration(s.DurationS*float64(time.Second)))
		}
		if live {
			fmt.Fprint(stderr, "\r\033[K")
		}
		fmt.Fprintln(stderr, s.Line(out))
		o.view.capacityStep(s)
	}
	out, serr := capacity.Search(trial.Context(), o.settings, slo, step, report)
	return base, out, serr
}

// finish completes f, the search's file, and writes it (-o) and the
// answer; a search that failed (serr) keeps what it measured.
func (o *capacityOptions) finish(ctx context.Context, f *capacity.File, out *capacity.Outcome, serr error, stdout, stderr io.Writer) error {
	f.Settings.StepS, f.Settings.WarmupS, f.Settings.CooldownS = o.step.Seconds(), o.warmup.Seconds(), o.cooldown.Seconds()
	if f.Settings.Arrival == "" {
		f.Settings.Arrival = string(load.Constant)
	}
	f.Version = versionText()
	f.Ended = time.Now().UTC().Format(time.RFC3339)
	if f.Overrides == nil {
		f.Overrides = []string{}
	}
	if serr != nil {
		// What was measured is kept; the search itself failed.
		if o.out != "" && len(out.Steps) > 0 {
			f.StopReason, f.StopDetail = "error", serr.Error()
			if err := writeCapacity(f, o.out, stdout); err != nil {
				fmt.Fprintln(stderr, "svclab capacity:", err)
			}
		}
		if errors.Is(serr, context.Canceled) && ctx.Err() != nil {
			return fmt.Errorf("capacity search interrupted after %d steps", len(out.Steps))
		}
		return serr
	}
	if o.out != "" {
		if err := writeCapacity(f, o.out, stdout); err != nil {
			return err
		}
	}
	answer := stdout
	if o.out == "-" {
		answer = stderr // stdout is the JSON
	}
	fmt.Fprintln(answer, f.Answer())
	if out.Stop == capacity.MinRate {
		return errors.New("no rate tried sustained the SLOs")
	}
	return nil
}

// settingsError names the flag of a bad setting.
func settingsError(err error) error {
	msg := err.Error()
	for _, m := range []struct{ prefix, flag string }{
		{"start:", "--start"}, {"max:", "--max-rate"}, {"min:", "--min-rate"}, {"growth:", "--growth"},
		{"precision:", "--precision"}, {"max_steps:", "--max-steps"},
	} {
		if rest, ok := strings.CutPrefix(msg, m.prefix); ok {
			return errors.New(m.flag + ":" + rest)
		}
	}
	return err
}

// plotPath is the PNG beside the JSON file.
func plotPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".png"
}

// writeCapacity writes f as JSON to path ("-": stdout) and its plot beside
// it.
func writeCapacity(f *capacity.File, path string, stdout io.Writer) error {
	if path != "-" && len(f.Steps) > 0 {
		png := plotPath(path)
		if err := capacity.Plot(f, png); err != nil {
			return err
		}
		f.Plot = filepath.Base(png)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	return nil
}
