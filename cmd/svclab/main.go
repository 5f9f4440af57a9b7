// Command svclab deploys microservice architecture variants, drives them with
// load and reports what each choice costs.
//
// Each subcommand lives in its own file and registers itself on rootCmd from
// an init function, so that parts of the project can grow their command
// without touching the others.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	_ "github.com/svclab/svclab/internal/deploy/all" // deployers a spec may name
)

// version and commit are set by the linker (see the Makefile).
var (
	version = "dev"
	commit  = "unknown"
)

var rootCmd = &cobra.Command{
	Use:   "svclab",
	Short: "A laboratory for microservice architecture decisions",
	Long: `svclab deploys every variant of a microservice system described in a spec,
drives it with load, and reports what each choice costs.

Start with:
  svclab up experiments/quickstart.toml     deploy one variant and keep it running
  svclab load --url http://127.0.0.1:8080/  drive any local service with load
  svclab run experiments/quickstart.toml    run a whole experiment and report`,
	Version:       version + " (" + commit + ")",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// usageError marks errors caused by how the command was called, so main can
// point at --help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rootCmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	if err := rootCmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "svclab:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		var xe exitError
		if errors.As(err, &xe) {
			os.Exit(xe.code)
		}
		os.Exit(1)
	}
}
