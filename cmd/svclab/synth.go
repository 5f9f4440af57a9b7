package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/svclab/svclab/apps/synth"
)

func init() {
	rootCmd.AddCommand(newSynthCmd())
}

func newSynthCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "synth",
		Short: "The synth app: show the services of a described or generated topology",
	}
	c.AddCommand(newSynthShowCmd())
	return c
}

// Output formats of synth show.
const (
	synthTOML = "toml"
	synthDot  = "dot"
)

func newSynthShowCmd() *cobra.Command {
	var sets []string
	var format string
	c := &cobra.Command{
		Use:   "show SPEC",
		Short: "Print a synth spec's services as TOML (to freeze a generated graph) or as a Graphviz graph",
		Long: `show prints the services of SPEC's synth app as they run: those listed under
[app.services.<name>], or those [app.graph] generates (the same seed gives
the same services on every machine). As TOML (the default) the output is an
[app] table svclab reads back to the same services, so a generated graph can
be frozen and edited; as dot it is the call graph for Graphviz, a node per
service with its work and response size, an edge per call with its count
and probability. See docs/APPS.md, "synth".`,
		Example: `  svclab synth show experiments/synth-generated.toml > frozen.toml
  svclab synth show experiments/synth-generated.toml --format dot | dot -Tsvg > graph.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return synthShow(args[0], sets, format, cmd.OutOrStdout())
		},
	}
	addSetFlag(c, &sets)
	c.Flags().StringVar(&format, "format", synthTOML, "output format: toml or dot")
	return c
}

func synthShow(path string, sets []string, format string, w io.Writer) error {
	if format != synthTOML && format != synthDot {
		return usageError{fmt.Errorf("--format %q: must be %q or %q", format, synthTOML, synthDot)}
	}
	s, err := loadSpec(path, sets)
	if err != nil {
		return err
	}
	c, err := synth.FromSpec(s)
	if err != nil {
		return err
	}
	out := c.TOML()
	if format == synthDot {
		if out, err = c.Dot(); err != nil {
			return fmt.Errorf("%s: dot: %w", path, err)
		}
		out = append(out, '\n')
	}
	_, err = w.Write(out)
	return err
}
