package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/spec"
)

func init() { rootCmd.AddCommand(newPlanCmd()) }

func newPlanCmd() *cobra.Command {
	var (
		asJSON      bool
		allowRemote bool
		brief       bool
		effective   bool
		seed        int64
		sets        []string
	)
	c := &cobra.Command{
		Use:   "plan <spec.toml>",
		Short: "Print the runs an experiment will make, without running anything",
		Long: `plan validates a spec, expands its [experiment] design into runs in the
order they will run, and prints an estimate of the total time, one line per
design point (its factors' levels and the runs that measure it) and the runs
in order. --effective adds the whole effective spec of every design point.

For a fractional design it also prints the defining relation and the alias
structure.

When the order is random and neither experiment.seed nor --seed is given,
plan draws a seed from the clock and says so; 'svclab run' draws its own, so
pass the printed seed to run with --seed (or set experiment.seed) to run the
order plan printed. experiment.json records the seed of every run.`,
		Example: `  svclab plan experiments/quickstart.toml
  svclab plan --effective experiments/faults.toml
  svclab plan --brief experiments/quickstart.toml
  svclab plan --set experiment.repetitions=5 experiments/quickstart.toml
  svclab plan --json experiments/quickstart.toml | jq '.runs[0]'`,
		Args: exactArgs(1, "give the spec file, e.g. svclab plan experiments/quickstart.toml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := loadDesignSpec(cmd.Context(), args[0], sets, !allowRemote)
			if err != nil {
				return err
			}
			var remote error
			if !allowRemote {
				remote = experiment.CheckRemote(s, true)
			}
			p, err := experiment.CheckPlan(cmd.Context(), s, experiment.ClockSeed(seed))
			if err := spec.Join(remote, err); err != nil {
				return err
			}
			if few := p.FewBlocks(); few != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", few)
			}
			if asJSON {
				ef := experiment.NewExperimentFile(p, version, commit, time.Now())
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(ef)
			}
			if brief && effective {
				return usageError{errors.New("--brief and --effective: give one")}
			}
			return printPlan(cmd.OutOrStdout(), p, planDetail{drawnSeed: seed == 0 && s.Experiment.Seed == nil, brief: brief, effective: effective})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the plan as experiment.json would record it")
	c.Flags().BoolVar(&brief, "brief", false, "print only the summary and the runs, not the design points")
	c.Flags().BoolVar(&effective, "effective", false, "also print the whole effective spec of each design point, as TOML")
	c.Flags().Int64Var(&seed, "seed", 0, "seed for the random run order when the spec sets none (0: from the clock)")
	addSetFlag(c, &sets)
	addAllowRemoteFlag(c, &allowRemote)
	return c
}

// addAllowRemoteFlag adds --allow-remote to a command that sends load:
// without it, a load.target that is not on this machine is refused
// before anything starts (experiment.CheckRemote).
func addAllowRemoteFlag(c *cobra.Command, allow *bool) {
	c.Flags().BoolVar(allow, "allow-remote", false, "allow a load.target that is not on this machine")
}

// addSetFlag adds --set key=value, repeatable, to a command that reads a spec.
func addSetFlag(c *cobra.Command, sets *[]string) {
	c.Flags().StringArrayVar(sets, "set", nil, "override a spec key, e.g. --set load.rate=100 --set 'experiment.factors.\"app.op\"=[\"void\"]' (repeatable)")
}

// loadSpec reads a spec and applies --set overrides in order, before the
// spec is checked. Every error here is bad input (exit status 2), whether
// the file is missing, unreadable or wrong, or an override is. When
// [deploy] or [experiment] is wrong, the mistakes of [app] and, for a
// command that sends load, of [load] are reported with them.
func loadSpec(path string, sets []string, sendsLoad bool) (*spec.Spec, error) {
	s, err := spec.Load(path, sets...)
	if err != nil {
		if s != nil {
			err = experiment.Check(s, err, sendsLoad)
		}
		return nil, usageError{err}
	}
	return s, nil
}

// loadDesignSpec is loadSpec for the commands that expand the design
// points (run, plan, kube render), which refuse a --set of a factor's key:
// every point would replace its value. When [deploy] or [experiment] is
// wrong, the mistakes of every design point are reported with them, if
// the points are known (experiment.CheckDesign), and so is a load target
// on another machine, for a command that refuses one (refuseRemote; the
// caller checks it of a spec without mistakes).
func loadDesignSpec(ctx context.Context, path string, sets []string, refuseRemote bool) (*spec.Spec, error) {
	s, err := spec.Load(path, sets...)
	if err != nil {
		if s != nil {
			var remote error
			if refuseRemote {
				remote = experiment.CheckRemote(s, s.DesignKnown())
			}
			err = spec.Join(experiment.CheckDesign(ctx, s, spec.Join(err, s.CheckFactorsNotSet())), remote)
		}
		return nil, usageError{err}
	}
	if err := s.CheckFactorsNotSet(); err != nil {
		return nil, usageError{err}
	}
	return s, nil
}

// planDetail says how much of a plan printPlan shows.
type planDetail struct {
	// drawnSeed: the seed came from the clock, not the spec or --seed.
	drawnSeed bool
	brief     bool // the summary and the runs only
	effective bool // and the effective spec of every design point
}

// designSize is plan p's design and its size, as svclab plan and the
// live view's header say it: "full design, 4 design points x 3
// repetitions = 12 runs".
func designSize(p *experiment.Plan) string {
	return fmt.Sprintf("%s design, %s x %s = %s", p.Design.Kind, english.Count(len(p.Design.Points), "design point"),
		english.Count(p.Spec.Experiment.Repetitions, "repetition"), english.Count(len(p.Runs), "run"))
}

func printPlan(w io.Writer, p *experiment.Plan, detail planDetail) error {
	e := p.Spec.Experiment
	d := p.Design
	if p.Sequential() {
		budget := fmt.Sprintf("max_runs %d", e.MaxRuns)
		if e.Budget > 0 {
			budget += fmt.Sprintf(", budget %s", e.Budget)
		}
		fmt.Fprintf(w, "experiment %s: %s design, %s, run in blocks until every question is decided: at most %s = %s (%s), each block every point once in a fresh order (seed %d)\n",
			e.Name, d.Kind, english.Count(len(d.Points), "design point"), english.Count(p.Repetitions, "block"), english.Count(len(p.Runs), "run"), budget, p.Seed)
	} else {
		fmt.Fprintf(w, "experiment %s: %s, order %s (seed %d)\n", e.Name, designSize(p), e.Order, p.Seed)
	}
	if detail.drawnSeed && p.Shuffled() && len(p.Runs) > 1 {
		fmt.Fprintf(w, "seed %d was drawn from the clock, as experiment.seed is not set; svclab run draws its own, so to run this order: svclab run --seed %d %s (or set experiment.seed)\n",
			p.Seed, p.Seed, shellJoin([]string{p.Spec.Path}))
	}
	fmt.Fprintf(w, "each run: warm-up %s, measure %s, cool-down %s\n", p.Warmup, p.Duration, p.Cooldown)
	estimate := roundDuration(p.Estimate()).String()
	if p.Sequential() {
		estimate = "at most " + estimate + ", less when the questions are decided sooner"
		if b := e.Budget.D(); b > 0 && b < p.Estimate() {
			estimate = fmt.Sprintf("at most %s (the budget), less when the questions are decided sooner", b)
		}
	}
	fmt.Fprintf(w, "estimated time: %s\n\n", estimate)
	if len(d.Factors) > 0 {
		fmt.Fprintln(w, "factors:")
		for _, f := range d.Factors {
			fmt.Fprintf(w, "  %s  %-28s %s\n", f.Letter, f.Name, formatLevels(f))
			if f.Linked() {
				fmt.Fprintf(w, "     %-28s sets %s\n", "", strings.Join(f.Keys, ", "))
			}
		}
		fmt.Fprintln(w)
	}
	printQuestions(w, e.Questions)
	if d.Kind == "fractional" {
		fmt.Fprintf(w, "defining relation: I = %s (resolution %s)\n", strings.Join(d.Defining, " = "), roman(d.Resolution))
		fmt.Fprintln(w, "aliases:")
		for _, a := range d.Aliases[1:] {
			fmt.Fprintf(w, "  %s\n", a)
		}
		fmt.Fprintln(w)
	}
	if !detail.brief {
		if err := printPoints(w, p); err != nil {
			return err
		}
		for _, n := range p.Inert() {
			fmt.Fprintf(w, "notice: %s\n", n)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"#", "run", "rep"}
	for _, f := range d.Factors {
		header = append(header, f.Letter+" "+f.Name)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range p.Runs {
		row := []string{fmt.Sprint(r.Index), r.ID, fmt.Sprint(r.Repetition)}
		for _, f := range d.Factors {
			row = append(row, f.FormatLevel(r.Levels[f.Name]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !detail.effective {
		return nil
	}
	seen := map[string]bool{}
	for _, r := range p.Runs {
		k := fmt.Sprint(r.Point)
		if seen[k] {
			continue
		}
		seen[k] = true
		fmt.Fprintf(w, "\n# effective spec: %s\n", d.Describe(r.Point))
		b, err := toml.Marshal(p.SpecOf(r).Tree())
		if err != nil {
			return fmt.Errorf("print effective spec: %w", err)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// printPoints writes one line per design point, in design order: its
// factors' levels and the indices of the runs that measure it. The design
// points differ from the spec only in those levels, which --effective
// shows as whole specs.
func printPoints(w io.Writer, p *experiment.Plan) error {
	d := p.Design
	runs := make(map[string][]string, len(d.Points))
	for _, r := range p.Runs {
		k := fmt.Sprint(r.Point)
		runs[k] = append(runs[k], fmt.Sprint(r.Index))
	}
	if len(d.Factors) == 0 {
		idx := runs[fmt.Sprint(d.Points[0])]
		fmt.Fprintf(w, "design point 1: the spec as written (no factors), %s %s\n", english.Noun(len(idx), "run"), strings.Join(idx, ","))
		return nil
	}
	fmt.Fprintln(w, "design points (--effective prints each one's whole spec):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"  point"}
	for _, f := range d.Factors {
		header = append(header, f.Letter)
	}
	fmt.Fprintln(tw, strings.Join(append(header, "run #"), "\t"))
	for i, pt := range d.Points {
		row := []string{fmt.Sprintf("  %d", i+1)}
		for fi, li := range pt {
			row = append(row, d.Factors[fi].FormatLevel(d.Factors[fi].Levels[li]))
		}
		fmt.Fprintln(tw, strings.Join(append(row, strings.Join(runs[fmt.Sprint(pt)], ",")), "\t"))
	}
	return tw.Flush()
}

func formatLevels(f spec.Factor) string {
	s := make([]string, len(f.Levels))
	for i, l := range f.Levels {
		s[i] = f.FormatLevel(l)
		if f.Linked() {
			s[i] = "{" + s[i] + "}"
		}
	}
	return "{" + strings.Join(s, ", ") + "}"
}

// printQuestions lists the questions the report answers first.
func printQuestions(w io.Writer, qs []spec.Question) {
	if len(qs) == 0 {
		return
	}
	fmt.Fprintln(w, "questions (the report answers each first):")
	for _, q := range qs {
		line := fmt.Sprintf("  %s: %s", q.Name, q.Effect)
		if len(q.By) > 0 {
			line += " by " + strings.Join(q.By, ", ")
		}
		if q.Metric != "" {
			line += ", on " + q.Metric
		}
		switch len(q.Margin) {
		case 1:
			line += fmt.Sprintf(", margin %g×", q.Margin[0])
		case 2:
			line += fmt.Sprintf(", equivalent within %g× to %g×", q.Margin[0], q.Margin[1])
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}

func roman(n int) string {
	r := map[int]string{3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}
	if s, ok := r[n]; ok {
		return s
	}
	return fmt.Sprint(n)
}

func roundDuration(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// exactArgs is cobra.ExactArgs with an error that says what to do.
func exactArgs(n int, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			// "--ui 127.0.0.1:9999" leaves the address as an argument:
			// the flag's value is optional, so it must follow an "=".
			if f := cmd.Flags().Lookup("ui"); f != nil && f.Changed && f.Value.String() == f.NoOptDefVal && len(args) > n {
				hint += fmt.Sprintf("; --ui takes its address after an \"=\" (--ui=%s)", args[0])
			}
			return usageError{fmt.Errorf("%s takes %s, got %d: %s", cmd.Name(), english.Count(n, "argument"), len(args), hint)}
		}
		return nil
	}
}
