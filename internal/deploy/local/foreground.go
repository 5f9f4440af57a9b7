package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svclab/svclab/internal/runtime"
)

// Foreground deploys p, writes where everything runs and a ready-to-paste
// curl command to w, and keeps the deployment up until ctx ends (Ctrl-C) or
// a child exits; then it stops everything. It is `svclab up`.
func Foreground(ctx context.Context, p *runtime.Topology, opts Options, w io.Writer) error {
	d, err := Deploy(ctx, p, opts)
	if err != nil {
		return err
	}
	Describe(w, d)
	fmt.Fprintln(w, "Ctrl-C (or SIGTERM) stops every process of the deployment.")

	var crashed error
	select {
	case <-ctx.Done():
	case proc := <-d.Exited():
		crashed = proc.exitError()
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), d.stopTimeout+5*time.Second)
	defer cancel()
	stopErr := d.Stop(stopCtx)
	if crashed != nil {
		return fmt.Errorf("deployment %s: %w", d.ID(), errors.Join(crashed, stopErr))
	}
	if stopErr != nil {
		return stopErr
	}
	fmt.Fprintf(w, "deployment %s stopped\n", d.ID())
	return nil
}

// Describe writes the deployment's processes, entry and gateway.
func Describe(w io.Writer, d *Deployment) {
	p := d.Topology()
	fmt.Fprintf(w, "deployment %s: app %s, placement %s, transport %s, %d process(es)\n",
		d.ID(), p.App.Name, p.Placement, p.Transport, len(d.Processes()))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  GROUP\tPID\tLISTENERS")
	for _, proc := range d.Processes() {
		var ls []string
		for _, c := range slices.Sorted(maps.Keys(proc.Listen)) {
			ls = append(ls, c+"="+proc.Listen[c].String())
		}
		if len(ls) == 0 {
			ls = []string{"-"}
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", proc.Name, proc.PID, strings.Join(ls, " "))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "entry:   %s (component %s)\n", d.Entry(), p.Entry)
	fmt.Fprintf(w, "gateway: %s (HTTP/JSON: POST /<package.Service>/<Method>)\n", d.GatewayURL())
	if ex := d.CurlExamples(); len(ex) > 0 {
		fmt.Fprintf(w, "try:\n  %s\n", strings.Join(ex, "\n  "))
	}
}
