package cli

import (
	"github.com/spf13/cobra"

	"github.com/svclab/svclab/internal/hostclock"
)

// `svclab hostclock --sentinel` is the bare timer loop a load run starts
// beside itself, on the generator's CPUs, for its measurement window
// (docs/LOAD.md "The generator's self-audit"). It is hidden: only svclab
// runs it, as it runs `svclab load --shard`.
func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:    "hostclock --sentinel --gap D --duration D [--start-at NS] [--poisson]",
		Short:  "Measure the host timer's wake-up lateness beside a load run (internal)",
		Hidden: true,
		// hostclock.SentinelMain reads the flags, so that tests can run
		// the same command in a process of their own.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return hostclock.SentinelMain(cmd.Context(), args, cmd.OutOrStdout())
		},
	})
}
