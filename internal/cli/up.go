package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	_ "github.com/svclab/svclab/apps/all" // apps a spec may name
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/live"
	_ "github.com/svclab/svclab/internal/runtime/transport/all" // transports a spec may name
	"github.com/svclab/svclab/internal/spec"
)

var upFlags struct {
	verbose bool
	timeout time.Duration
	sets    []string
	ui      uiOptions
}

var upCmd = &cobra.Command{
	Use:   "up <spec.toml>",
	Short: "Deploy one variant of a spec and keep it running in the foreground",
	Long: `up validates the spec, starts one process per group of its placement with
the spec's deployer (deploy.deployer, "local" by default), waits until every
process answers health checks over its transport, prints the entry address,
the HTTP/JSON gateway and a curl command, and stays in the foreground.

Ctrl-C or SIGTERM stops every process (SIGTERM, then SIGKILL after a grace
period). There is no "svclab down": the processes live only as long as "up",
and die with it even when it is killed with -9 (see docs/DEPLOY.md).

The spec's [app] and [deploy] tables are used; [load] and [experiment] are
ignored. Factors are not expanded: up deploys the spec as written, and
says which value of each factor's key that is; --set picks a level.`,
	Example: `  svclab up experiments/chain.toml
  svclab up -v experiments/select.toml     # also show the processes' logs
  svclab up --set deploy.placement=monolith --set deploy.transport=http experiments/chain.toml`,
	Args: exactArgs(1, "give the spec file, e.g. svclab up experiments/chain.toml"),
	RunE: func(cmd *cobra.Command, args []string) error {
		s, err := loadSpec(args[0], upFlags.sets, false)
		if err != nil {
			return err
		}
		if note := factorNote(s, upFlags.sets); note != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), note)
		}
		deployer, topo, err := deploy.Resolve(s)
		if err != nil {
			return err
		}
		hostNote(cmd.ErrOrStderr(), deployer.Name())
		opts := deploy.Options{ReadyTimeout: upFlags.timeout}
		if upFlags.verbose {
			opts.Log = os.Stderr
		}
		view, err := upFlags.ui.start(cmd.ErrOrStderr(), live.Experiment{Command: "up", Name: args[0]})
		if err != nil {
			return err
		}
		t, err := experiment.StartTrial(cmd.Context(), deployer, topo, opts, nil)
		if err == nil {
			view.upStarted(t.Context(), t.Deployment)
			err = t.Foreground(cmd.OutOrStdout())
		}
		view.stop(err)
		return err
	},
}

func init() {
	upCmd.Flags().BoolVarP(&upFlags.verbose, "verbose", "v", false, "forward every process's output to stderr, prefixed with its group")
	upCmd.Flags().DurationVar(&upFlags.timeout, "timeout", 0, "how long to wait for readiness (default: deploy.start_timeout, 20s)")
	addSetFlag(upCmd, &upFlags.sets)
	upFlags.ui.addFlags(upCmd.Flags())
	rootCmd.AddCommand(upCmd)
}

// factorNote says, for a spec with factors, which value of each factor's
// key up deploys (the spec's own, or the default), so that no one takes
// the variant running for one of the levels they listed. A key that sets
// (--set) gave is left out: its user picked it.
func factorNote(s *spec.Spec, sets []string) string {
	picked := map[string]bool{}
	for _, kv := range sets {
		k, _, _ := strings.Cut(kv, "=")
		picked[strings.TrimSpace(k)] = true
	}
	var parts []string
	for _, f := range s.Experiment.Factors {
		if !strings.HasPrefix(f.Name, "app.") && !strings.HasPrefix(f.Name, "deploy.") {
			continue // up deploys; it sends no load
		}
		if picked[f.Name] {
			continue
		}
		v := "its default"
		if x, ok := s.Lookup(f.Name); ok {
			v = spec.FormatValue(x)
		}
		parts = append(parts, fmt.Sprintf("%s = %s (levels %s)", f.Name, v, formatLevels(f)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "note: up deploys the spec as written, not its factors' levels: " + strings.Join(parts, "; ") +
		". Pick a level with --set KEY=VALUE."
}
