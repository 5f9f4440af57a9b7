package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/spec"
)

func init() { rootCmd.AddCommand(newPlanCmd()) }

func newPlanCmd() *cobra.Command {
	var (
		asJSON bool
		brief  bool
		seed   int64
		sets   []string
	)
	c := &cobra.Command{
		Use:   "plan <spec.toml>",
		Short: "Print the runs an experiment will make, without running anything",
		Long: `plan validates a spec, expands its [experiment] design into runs in the
order they will run, and prints each run's factor levels, the effective spec
of every design point, and an estimate of the total time.

For a fractional design it also prints the defining relation and the alias
structure.`,
		Example: `  svclab plan experiments/quickstart.toml
  svclab plan --brief experiments/quickstart.toml
  svclab plan --set experiment.repetitions=5 experiments/quickstart.toml
  svclab plan --json experiments/quickstart.toml | jq '.runs[0]'`,
		Args: exactArgs(1, "give the spec file, e.g. svclab plan experiments/quickstart.toml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := loadSpec(args[0], sets)
			if err != nil {
				return err
			}
			p, _, err := experiment.PlanSpec(cmd.Context(), s, experiment.ClockSeed(seed))
			if err != nil {
				return err
			}
			if asJSON {
				ef := experiment.NewExperimentFile(p, version, commit, time.Now())
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(ef)
			}
			return printPlan(cmd.OutOrStdout(), p, !brief)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the plan as experiment.json would record it")
	c.Flags().BoolVar(&brief, "brief", false, "leave out the effective spec of each design point")
	c.Flags().Int64Var(&seed, "seed", 0, "seed for the random run order when the spec sets none (0: from the clock)")
	addSetFlag(c, &sets)
	return c
}

// addSetFlag adds --set key=value, repeatable, to a command that reads a spec.
func addSetFlag(c *cobra.Command, sets *[]string) {
	c.Flags().StringArrayVar(sets, "set", nil, "override a spec key, e.g. --set load.rate=100 --set 'experiment.factors.\"app.op\"=[\"void\"]' (repeatable)")
}

// loadSpec reads a spec and applies --set overrides in order, before the
// spec is checked. An error in an override is a usage error.
func loadSpec(path string, sets []string) (*spec.Spec, error) {
	s, err := spec.Load(path, sets...)
	var se *spec.Error
	if errors.As(err, &se) && se.Flag != "" {
		return nil, usageError{err}
	}
	return s, err
}

func printPlan(w io.Writer, p *experiment.Plan, full bool) error {
	e := p.Spec.Experiment
	d := p.Design
	fmt.Fprintf(w, "experiment %s: %s design, %d design points x %d repetitions = %d runs, order %s (seed %d)\n",
		e.Name, d.Kind, len(d.Points), e.Repetitions, len(p.Runs), e.Order, p.Seed)
	fmt.Fprintf(w, "each run: warm-up %s, measure %s, cool-down %s\n", p.Warmup, p.Duration, p.Cooldown)
	fmt.Fprintf(w, "estimated time: %s\n\n", roundDuration(p.Estimate()))
	if len(d.Factors) > 0 {
		fmt.Fprintln(w, "factors:")
		for _, f := range d.Factors {
			fmt.Fprintf(w, "  %s  %-28s %s\n", f.Letter, f.Name, formatLevels(f.Levels))
		}
		fmt.Fprintln(w)
	}
	if d.Kind == "fractional" {
		fmt.Fprintf(w, "defining relation: I = %s (resolution %s)\n", strings.Join(d.Defining, " = "), roman(d.Resolution))
		fmt.Fprintln(w, "aliases:")
		for _, a := range d.Aliases[1:] {
			fmt.Fprintf(w, "  %s\n", a)
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
			row = append(row, fmt.Sprint(r.Levels[f.Name]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !full {
		return nil
	}
	seen := map[*spec.Spec]bool{}
	for _, r := range p.Runs {
		if seen[r.Spec] {
			continue
		}
		seen[r.Spec] = true
		fmt.Fprintf(w, "\n# effective spec: %s\n", d.Describe(r.Point))
		b, err := toml.Marshal(r.Spec.Tree())
		if err != nil {
			return fmt.Errorf("print effective spec: %w", err)
		}
		w.Write(b)
	}
	return nil
}

func formatLevels(levels []any) string {
	s := make([]string, len(levels))
	for i, l := range levels {
		s[i] = fmt.Sprint(l)
	}
	return "{" + strings.Join(s, ", ") + "}"
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
			return usageError{fmt.Errorf("%s takes %d argument(s), got %d: %s", cmd.Name(), n, len(args), hint)}
		}
		return nil
	}
}
