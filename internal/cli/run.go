package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/spec"
)

func init() { rootCmd.AddCommand(newRunCmd()) }

func newRunCmd() *cobra.Command {
	var (
		opts        experiment.Options
		noReport    bool
		wantReport  bool
		allowRemote bool
		sets        []string
		ui          uiOptions
	)
	c := &cobra.Command{
		Use:   "run <spec.toml>",
		Short: "Run an experiment: deploy, load and measure every run, then report",
		Long: `run executes the plan that 'svclab plan' prints. For each run it deploys the
variant with the spec's deployer (deploy.deployer, "local" by default), warms
up, measures with the load generator while sampling every process's CPU and
memory (its own too), tears down, and commits the run's results atomically
under the results directory.

A run whose deployment fails or whose service crashes is recorded as failed,
with the reason and the tail of the service's stderr, and the experiment
goes on (unless --fail-fast). If svclab is interrupted or killed, the
committed runs are kept; --resume continues with the rest.

At the end it runs the analysis and prints the path of the report. When the
analysis is not installed ('make venv' makes it), the results are complete
all the same: run says so, and how to write the report later (svclab report
DIR), and exits 0, unless --report asked for the report.`,
		Example: `  svclab run experiments/quickstart.toml
  svclab run --resume results/quickstart-20261122-101500 experiments/quickstart.toml
  svclab run --set experiment.repetitions=2 --set load.duration=2s experiments/quickstart.toml`,
		Args: exactArgs(1, "give the spec file, e.g. svclab run experiments/quickstart.toml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wantReport && noReport {
				return usageError{errors.New("--report and --no-report: give one")}
			}
			s, err := loadDesignSpec(cmd.Context(), args[0], sets, !allowRemote)
			if err != nil {
				return err
			}
			if !allowRemote {
				if err := experiment.CheckRemote(s, true); err != nil {
					// With the design points' mistakes, as plan reports
					// them, rather than in the next invocation.
					_, perr := experiment.CheckPlan(cmd.Context(), s, 1)
					return spec.Join(err, perr)
				}
			}
			if opts.ResumeDir != "" {
				if err := resumeKube(cmd.Context(), cmd.ErrOrStderr(), s); err != nil {
					return err
				}
			}
			if s.Experiment.Until == spec.UntilDecided {
				// Each block's end asks the analysis, so it must be there
				// before the first run, not after the first block.
				if _, err := analysisCommand(); err != nil {
					return fmt.Errorf("experiment.until = \"decided\" asks the analysis after each block: %w", err)
				}
				opts.Decide = decideWithAnalysis
			}
			opts.Version, opts.Commit = version, commit
			opts.Log = cmd.ErrOrStderr()
			hostNote(opts.Log, s.Deploy.Deployer)
			opts.Live = term.IsTerminal(int(os.Stderr.Fd()))
			endUI, err := ui.startRun(cmd.Context(), cmd.ErrOrStderr(), s, &opts)
			if err != nil {
				return err
			}
			out, err := experiment.Execute(cmd.Context(), s, opts)
			endUI(err)
			if out != nil && out.Dir != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d ok, %d failed, %d kept from before\n", english.Count(out.Runs, "run"), out.OK, out.Failed, out.Resumed)
				if out.Bottlenecked > 0 {
					advice := "give it its own CPUs (experiment.isolation) or a lower rate"
					if out.Isolated {
						// Its own CPUs did not suffice: the reasons in run.json
						// say whether other work held them or the rate is
						// more than one generator sends.
						advice = "it had CPUs of its own, so lower the rate, split it over load.generators, or run on a quieter machine"
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: the load generator fell behind in %d of %d ok runs (generator_bottleneck): their latencies include its own lag; see each run.json's warnings; %s\n", out.Bottlenecked, out.OK, advice)
				}
				if out.Saturated > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: the system under test completed far fewer requests than offered in %d of %d ok runs (saturated): their latencies describe its queue; see each run.json's warnings; lower the rate, or find its capacity with svclab capacity\n", out.Saturated, out.OK)
				}
				if out.Stalled > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: the system under test stopped answering for a second or more in %d of %d ok runs (stalled): their percentiles hide it; see each run.json's warnings\n", out.Stalled, out.OK)
				}
			}
			if err != nil {
				if errors.Is(err, experiment.ErrResumeMismatch) {
					return usageError{err}
				}
				if errors.Is(err, experiment.ErrThresholdAbort) && out != nil && out.Dir != "" {
					return exitError{exitThresholds, resumeError(err, out.Dir, args[0], sets)}
				}
				if errors.Is(err, experiment.ErrInterrupted) && out != nil && out.Dir != "" {
					return resumeError(err, out.Dir, args[0], sets)
				}
				if errors.Is(err, experiment.ErrInterrupted) {
					return err
				}
				if out != nil && out.Dir != "" {
					return fmt.Errorf("%w (results so far: %s)", err, out.Dir)
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "results: %s\n", out.Dir)
			var breached error
			if out.Breached > 0 {
				// As k6 does, so that a pipeline can gate on the thresholds.
				breached = exitError{exitThresholds, fmt.Errorf("%d of %d runs broke thresholds of load.thresholds (see their run.json)", out.Breached, out.Runs)}
			}
			if noReport {
				return breached
			}
			if out.OK == 0 && out.Resumed == 0 {
				// Nothing to analyse: the reasons are in the lines above
				// and in each run.json, not in a report that cannot be made.
				return errors.Join(breached, fmt.Errorf("no run finished ok (%d failed; the reasons are above and in each run.json under %s)", out.Failed, out.Dir))
			}
			return errors.Join(breached, reportAfterRun(cmd, out.Dir, wantReport))
		},
	}
	f := c.Flags()
	f.StringVar(&opts.ResultsRoot, "results", "results", "directory under which the experiment's results directory is made")
	f.StringVar(&opts.ResumeDir, "resume", "", "continue the experiment in this results directory (the spec must be unchanged)")
	f.BoolVar(&opts.FailFast, "fail-fast", false, "stop at the first failed run")
	f.Int64Var(&opts.Seed, "seed", 0, "seed for the random run order when the spec sets none (0: from the clock)")
	f.BoolVar(&noReport, "no-report", false, "do not run the analysis at the end")
	f.BoolVar(&wantReport, "report", false, "fail (exit 1) when the report cannot be written; by default a missing analysis (make venv) leaves the complete results and a notice")
	addSetFlag(c, &sets)
	addAllowRemoteFlag(c, &allowRemote)
	ui.addFlags(f)
	return c
}

// resumeError gives an interrupted run's error the whole command that
// resumes it: --resume, every --set the run was started with (the spec
// hash covers them, so a resume without them is refused), and the spec.
func resumeError(err error, dir, specPath string, sets []string) error {
	args := []string{"svclab", "run", "--resume", dir}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	// The runner's own line names the directory and the spec only.
	msg, _, _ := strings.Cut(err.Error(), "; continue with: ")
	return wrapped{msg + "; continue with: " + shellJoin(append(args, specPath)), err}
}

// wrapped is an error with its own message that still wraps err.
type wrapped struct {
	msg string
	err error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.err }

// shellJoin writes args as a POSIX shell reads them back, each quoted
// when it holds anything but safe characters.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
