package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	_ "github.com/svclab/svclab/apps/all" // every app a host may run
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/runtime"
	_ "github.com/svclab/svclab/internal/runtime/transport/all" // every transport
)

var hostFlags struct {
	config     string
	deployment string
	group      string
}

var hostCmd = &cobra.Command{
	Use:    "host",
	Short:  "Run one group of a deployment (started by the deployers, not by hand)",
	Hidden: true,
	Long: `host runs one group of components in this process, as a deployer asked.

The deployer passes a HostConfig (proto/host/v1/host.proto, in the protobuf JSON
mapping) in the ` + runtime.HostConfigEnv + ` environment variable, or in a file named by
--config, and may hand over listening sockets as inherited file descriptors.
--deployment and --group only label the process for ps and /proc scans. The
host exits with status 0 on SIGTERM or SIGINT, or when its deployer stops it
over the control channel.`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		cfg, err := hostentry.Config(hostFlags.config, hostFlags.group)
		if errors.Is(err, hostentry.ErrNoConfig) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		// The lean host binary beside this one, when it was built with it
		// (the kube deployer's pods run `/svclab host`); if its exec
		// fails, this process is the host.
		var args []string
		cmd.Flags().Visit(func(f *pflag.Flag) { args = append(args, "--"+f.Name, f.Value.String()) })
		if err := hostentry.ExecLean(args); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), err)
		}
		return hostentry.Run(cmd.Context(), cfg)
	},
}

func init() {
	hostCmd.Flags().StringVar(&hostFlags.config, "config", "", "read the HostConfig (protobuf JSON) from this file instead of $"+runtime.HostConfigEnv)
	hostCmd.Flags().StringVar(&hostFlags.deployment, "deployment", "", "deployment id (a label for ps and /proc scans)")
	hostCmd.Flags().StringVar(&hostFlags.group, "group", "", "group name (a label; must match the config)")
	rootCmd.AddCommand(hostCmd)
}

// hostNote prints which program the hosts run when it is not the lean host
// binary (hostentry.Describe), for the deployers that start hosts on this
// machine: their memory is about twice as much then, and a user comparing
// it should know. experiment.json records the program either way.
func hostNote(w io.Writer, deployer string) {
	if deployer != "" && deployer != "local" && deployer != "netns" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if _, ok := hostentry.Lean(exe); !ok {
		fmt.Fprintln(w, hostentry.Describe(exe))
	}
}
