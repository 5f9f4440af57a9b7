package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/svclab/svclab/apps/synth"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

func init() {
	rootCmd.AddCommand(newSynthCmd())
}

func newSynthCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "synth",
		Short: "The synth app: show a described or generated topology, import one from call-graph traces",
	}
	c.AddCommand(newSynthShowCmd(), newSynthImportCmd())
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
		Example: `  svclab synth show experiments/synth-graph.toml > frozen.toml
  svclab synth show experiments/synth-graph.toml --format dot | dot -Tsvg > graph.svg`,
		Args: exactArgs(1, "give the spec file, e.g. svclab synth show experiments/synth-graph.toml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return synthShow(args[0], sets, format, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	addSetFlag(c, &sets)
	c.Flags().StringVar(&format, "format", synthTOML, "output format: toml or dot")
	return c
}

func synthShow(path string, sets []string, format string, w, notes io.Writer) error {
	if format != synthTOML && format != synthDot {
		return usageError{fmt.Errorf("--format %q: must be %q or %q", format, synthTOML, synthDot)}
	}
	s, err := loadSpec(path, sets, false)
	if err != nil {
		return err
	}
	c, err := synthConfig(s)
	if err != nil {
		return err
	}
	for _, n := range c.Notices() {
		fmt.Fprintf(notes, "notice: %s\n", n)
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

func newSynthImportCmd() *cobra.Command {
	var entry, response, out string
	var cpuShare float64
	var paths int
	c := &cobra.Command{
		Use:   "import TRACE.csv",
		Short: "Write a synth spec from microservice call-graph traces (Alibaba's 2021 and 2022 schemas)",
		Long: `import reads a call-graph trace in the schema of Alibaba's published
microservice traces (cluster-trace-microservices-v2021 MSCallGraph, or v2022
CallGraph: a CSV whose header names traceid, rpcid or rpc_id, um, dm and rt)
and writes a synth spec of one entry service's traces: its services and
edges, each edge's probability (the share of its caller's calls that made
it) and count (its calls when made), and each service's own time, its
response time less its callees', clamped at zero. The traces give wall time
only: --cpu-share of it is written as cpu, the rest as sleep; and no sizes:
every service answers --response bytes.

Rows whose rpc ids break the call tree, duplicates, rows of one rpc id that
disagree, and traces without their root call are dropped; rows that do not
parse are reported by line and column and skipped. The counts and reasons,
and the share of time that could not be attributed, go to standard error and
into the spec's first lines. See docs/APPS.md, "synth".`,
		Example: `  svclab synth import CallGraph_0.csv --entry MS_27421 -o imported.toml
  svclab synth import apps/synth/testdata/alibaba-2022-sample.csv`,
		Args: exactArgs(1, "give the trace's CSV file, e.g. svclab synth import apps/synth/testdata/alibaba-2022-sample.csv"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var spec bytes.Buffer
			if err := synthImport(args[0], synth.ImportOptions{Entry: entry, CPUShare: cpuShare, Paths: paths}, response, &spec, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if out == "" {
				_, err := cmd.OutOrStdout().Write(spec.Bytes())
				return err
			}
			// Only a whole spec replaces the file: a failed import
			// leaves what was there.
			return renameio.WriteFile(out, spec.Bytes(), 0o644)
		},
	}
	c.Flags().StringVar(&entry, "entry", "", "the entry service whose traces to import (default: the entry of the most traces)")
	c.Flags().Float64Var(&cpuShare, "cpu-share", 0.5, "the part of each service's own time written as cpu, the rest as sleep, 0 to 1")
	c.Flags().StringVar(&response, "response", "1KiB", "every service's response size")
	c.Flags().StringVarP(&out, "output", "o", "", "write the spec to this file instead of standard output")
	c.Flags().IntVar(&paths, "paths", 0, "write the call trees of this many of the most frequent shapes as app.paths (0: none)")
	return c
}

func synthImport(path string, opts synth.ImportOptions, response string, w, report io.Writer) error {
	if opts.CPUShare < 0 || opts.CPUShare > 1 {
		return usageError{fmt.Errorf("--cpu-share %g: must be between 0 and 1", opts.CPUShare)}
	}
	if opts.Paths < 0 {
		return usageError{fmt.Errorf("--paths %d: must not be negative", opts.Paths)}
	}
	if err := opts.Response.UnmarshalText([]byte(response)); err != nil {
		return usageError{fmt.Errorf("--response: %w", err)}
	}
	f, err := os.Open(path)
	if err != nil {
		return usageError{err}
	}
	defer f.Close()
	c, rep, err := synth.ImportAlibaba(f, opts)
	if rep != nil {
		for _, l := range rep.Lines() {
			fmt.Fprintln(report, "svclab synth import: "+l)
		}
	}
	if err != nil {
		// The trace is the input, as a spec is: it cannot be imported
		// as it is.
		return usageError{fmt.Errorf("%s: %w", path, err)}
	}
	for _, n := range c.Notices() {
		fmt.Fprintln(report, "svclab synth import: notice: "+n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by svclab synth import from %s (--cpu-share %g, --response %s, --paths %d).\n", filepath.Base(path), opts.CPUShare, opts.Response, opts.Paths)
	for _, l := range rep.Lines() {
		b.WriteString("# " + l + "\n")
	}
	b.Write(c.TOML())
	_, err = io.WriteString(w, b.String())
	return err
}

// synthConfig decodes and checks a spec's [app] table as a synth config,
// with every error at its key and line, without resolving [deploy].
func synthConfig(s *spec.Spec) (*synth.Config, error) {
	if s.App.Name != synth.Name {
		return nil, s.Errorf("app.name", "is %q; this needs app.name = %q", s.App.Name, synth.Name)
	}
	cfg, err := runtime.DecodeApp(s)
	if err != nil {
		return nil, err
	}
	return cfg.(*synth.Config), nil
}
