package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	_ "github.com/svclab/svclab/apps/all" // apps a spec may name
	"github.com/svclab/svclab/internal/deploy"
	_ "github.com/svclab/svclab/internal/runtime/transport/all" // transports a spec may name
)

var upFlags struct {
	verbose bool
	timeout time.Duration
	sets    []string
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
ignored. Factors are not expanded: up deploys the spec as written.`,
	Example: `  svclab up experiments/chain.toml
  svclab up -v experiments/select.toml     # also show the processes' logs
  svclab up --set deploy.placement=monolith --set deploy.transport=http experiments/chain.toml`,
	Args: exactArgs(1, "give the spec file, e.g. svclab up experiments/chain.toml"),
	RunE: func(cmd *cobra.Command, args []string) error {
		s, err := loadSpec(args[0], upFlags.sets)
		if err != nil {
			return err
		}
		deployer, topo, err := deploy.Resolve(s)
		if err != nil {
			return err
		}
		opts := deploy.Options{ReadyTimeout: upFlags.timeout}
		if upFlags.verbose {
			opts.Log = os.Stderr
		}
		d, err := deployer.Deploy(cmd.Context(), topo, opts)
		if err != nil {
			return err
		}
		return deploy.Foreground(cmd.Context(), d, cmd.OutOrStdout())
	},
}

func init() {
	upCmd.Flags().BoolVarP(&upFlags.verbose, "verbose", "v", false, "forward every process's output to stderr, prefixed with its group")
	upCmd.Flags().DurationVar(&upFlags.timeout, "timeout", 0, "how long to wait for readiness (default: deploy.start_timeout, 20s)")
	addSetFlag(upCmd, &upFlags.sets)
	rootCmd.AddCommand(upCmd)
}
