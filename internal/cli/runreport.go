package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// errNoAnalysis is the analysis package missing from every place
// analysisCommand looks: a setup step not taken ('make venv'), not a fault
// of the results.
var errNoAnalysis = errors.New("svclab-analysis not found: run 'make venv' in the svclab checkout, or set SVCLAB_VENV to a virtualenv that has it")

// reportAfterRun writes the report of a finished experiment in dir. Its
// results are complete whatever happens here, so a missing analysis is a
// notice (exit 0) that says how to write the report later, unless the user
// asked for the report with --report; an analysis that ran and failed is
// an error either way.
func reportAfterRun(cmd *cobra.Command, dir string, required bool) error {
	report, err := runAnalysis(cmd.Context(), dir, "", "", cmd.ErrOrStderr())
	switch {
	case err == nil:
		fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", report)
		return nil
	case errors.Is(err, errNoAnalysis) && !required:
		fmt.Fprintf(cmd.ErrOrStderr(), "notice: the results are complete, but the report was not written (%v); write it later with: svclab report %s\n", err, shellJoin([]string{dir}))
		return nil
	}
	return fmt.Errorf("report: %w (the results are complete; retry with: svclab report %s)", err, shellJoin([]string{dir}))
}
