package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func init() { rootCmd.AddCommand(newReportCmd()) }

func newReportCmd() *cobra.Command {
	var metric, operation string
	c := &cobra.Command{
		Use:   "report <results-dir>",
		Short: "Analyse a results directory and write report.html and report.md",
		Long: `report runs the analysis package (svclab-analysis) from the project's
virtualenv on a results directory, writes report.html and report.md into it,
and prints the report's path.

The virtualenv is found from $SVCLAB_VENV, then .venv beside the directory
that holds the svclab binary, then .venv in the current directory; 'make
venv' creates it.`,
		Example: `  svclab report results/quickstart-20261122-101500
  svclab report --metric p50_ms results/quickstart-20261122-101500`,
		Args: exactArgs(1, "give the results directory, e.g. svclab report results/quickstart-20261122-101500"),
		RunE: func(cmd *cobra.Command, args []string) error {
			report, err := runAnalysis(cmd.Context(), args[0], metric, operation, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", report)
			return nil
		},
	}
	c.Flags().StringVar(&metric, "metric", "", "headline metric (default: the experiment's response, e.g. p99_ms)")
	c.Flags().StringVar(&operation, "operation", "", "operation to analyse (default: total)")
	return c
}

// analysisCommand finds the svclab-analysis console script.
func analysisCommand() (string, error) {
	var candidates []string
	if v := os.Getenv("SVCLAB_VENV"); v != "" {
		candidates = append(candidates, filepath.Join(v, "bin", "svclab-analysis"))
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			candidates = append(candidates, filepath.Join(filepath.Dir(filepath.Dir(exe)), ".venv", "bin", "svclab-analysis"))
		}
	}
	candidates = append(candidates, filepath.Join(".venv", "bin", "svclab-analysis"))
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	if p, err := exec.LookPath("svclab-analysis"); err == nil {
		return p, nil
	}
	return "", errNoAnalysis
}

// runAnalysis writes the report of a results directory and returns the
// path of report.html. The analysis prints that path as its last line.
func runAnalysis(ctx context.Context, dir, metric, operation string, stderr io.Writer) (string, error) {
	bin, err := analysisCommand()
	if err != nil {
		return "", err
	}
	args := []string{"report", dir}
	if metric != "" {
		args = append(args, "--metric", metric)
	}
	if operation != "" {
		args = append(args, "--operation", operation)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout = &out
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	var last string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			last = line
		}
	}
	last = strings.TrimPrefix(last, "report: ")
	if last == "" {
		return filepath.Join(dir, "report.html"), nil
	}
	return last, nil
}
