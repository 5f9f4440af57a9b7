// Package cli is the svclab command: it deploys microservice architecture
// variants, drives them with load and reports what each choice costs.
// cmd/svclab runs it, and so does any binary built on the public package
// svc/cli, with the apps its module registers beside the reference apps.
//
// Each subcommand lives in its own file and registers itself on rootCmd from
// an init function, so that parts of the project can grow their command
// without touching the others.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	_ "github.com/svclab/svclab/internal/deploy/all" // deployers a spec may name
	"github.com/svclab/svclab/internal/spec"
)

// version and commit are set by the linker (see the Makefile), as
// variables of versionPackage.
var (
	version = "dev"
	commit  = "unknown"
)

// versionText is the version, with the commit where that says more: a
// build of a bare commit is named by the commit alone.
func versionText() string {
	if commit == version {
		return version
	}
	return version + " (" + commit + ")"
}

// versionPackage is the import path the linker's -X flags name.
const versionPackage = "github.com/svclab/svclab/internal/cli"

var rootCmd = &cobra.Command{
	Use:   "svclab",
	Short: "A laboratory for microservice architecture decisions",
	Long: `svclab deploys every variant of a microservice system described in a spec,
drives it with load, and reports what each choice costs.

Start with:
  svclab up experiments/quickstart.toml     deploy one variant and keep it running
  svclab load --url http://127.0.0.1:8080/ --rate 50  drive any local service with load
  svclab run experiments/quickstart.toml    run a whole experiment and report

Exit status: 0 on success; 1 when the work itself failed (a deployment, a
run, the analysis); 2 for bad input, found before anything starts: a bad
flag or argument, or an error in the spec, whether the file or --set holds
it; 99 when load.thresholds were broken. Each command's help says more.`,
	Version:       versionText(),
	SilenceUsage:  true,
	SilenceErrors: true,
}

// usageError marks errors caused by how the command was called, so main can
// point at --help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitUsage is the exit status of bad input: flags, arguments or a spec.
const exitUsage = 2

// badInput reports whether err is the user's input at fault: how the
// command was called, or a spec error, whether the file or a --set flag
// wrote the bad key, so that both exit alike.
func badInput(err error) bool {
	var ue usageError
	var se *spec.Error
	return errors.As(err, &ue) || errors.As(err, &se)
}

// argsAreInput makes every wrong argument bad input, which exits
// exitUsage as a wrong flag does: a command's own check of its arguments
// (cobra's say nothing of --help), and an unknown subcommand of a command
// that only groups others, which cobra answers with its help and status 0
// below the root and with status 1 at it.
func argsAreInput(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				var ue usageError
				if errors.As(err, &ue) {
					return err
				}
				// main prefixes "svclab: ", so the path goes without it.
				name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
				return usageError{fmt.Errorf("%s: %w (see '%s --help')", name, err, cmd.CommandPath())}
			}
			return nil
		}
	}
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			hint := ""
			if cmd.SuggestionsMinimumDistance <= 0 {
				cmd.SuggestionsMinimumDistance = 2 // cobra's own default
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				hint = fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
			}
			return usageError{fmt.Errorf("unknown command %q for %q%s (see '%s --help')", args[0], cmd.CommandPath(), hint, cmd.CommandPath())}
		}
	}
	for _, sub := range c.Commands() {
		argsAreInput(sub)
	}
}

// Main runs the command line in os.Args. It returns when the command
// succeeded, and otherwise exits with the status the root command's help
// describes. The deployers re-execute the running binary as `svclab host`,
// so a binary that calls Main runs its own apps' hosts.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rootCmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	argsAreInput(rootCmd)
	if err := rootCmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "svclab:", err)
		if badInput(err) {
			os.Exit(exitUsage)
		}
		var xe exitError
		if errors.As(err, &xe) {
			os.Exit(xe.code)
		}
		os.Exit(1)
	}
}
