package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Foreground writes where everything of d runs and a ready-to-paste curl
// command to w, and keeps d up until ctx ends (Ctrl-C) or a process exits;
// then it stops d. It is `svclab up`, for any deployer.
func Foreground(ctx context.Context, d Deployment, w io.Writer) error {
	Describe(w, d)
	fmt.Fprintln(w, "Ctrl-C (or SIGTERM) stops every process of the deployment.")

	var crashed error
	select {
	case <-ctx.Done():
	case proc := <-d.Exited():
		crashed = proc.Exit()
	}
	// ctx has ended by now, or soon will; Stop still needs its grace
	// period, which the deployer bounds.
	stopErr := d.Stop(context.WithoutCancel(ctx))
	if crashed != nil {
		return fmt.Errorf("deployment %s: %w", d.ID(), errors.Join(crashed, stopErr))
	}
	if stopErr != nil {
		return stopErr
	}
	fmt.Fprintf(w, "deployment %s stopped\n", d.ID())
	return nil
}

// Describe writes d's processes, entry, gateway and curl examples.
func Describe(w io.Writer, d Deployment) {
	topo := d.Topology()
	procs := d.Processes()
	fmt.Fprintf(w, "deployment %s: app %s, placement %s, transport %s, %d process(es)\n",
		d.ID(), topo.App.Name, topo.Placement, topo.Transport, len(procs))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  GROUP\tPID\tLISTENERS")
	for _, proc := range procs {
		info, listen := proc.Info(), proc.Listeners()
		var ls []string
		for _, c := range slices.Sorted(maps.Keys(listen)) {
			ls = append(ls, c+"="+listen[c].String())
		}
		if len(ls) == 0 {
			ls = []string{"-"}
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", info.Name, info.PID, strings.Join(ls, " "))
	}
	_ = tw.Flush()
	caps := d.Capabilities()
	if caps.Describer != nil {
		caps.Describer.DescribeMore(w)
	}
	fmt.Fprintf(w, "entry:   %s (component %s)\n", d.Entry(), topo.Entry)
	fmt.Fprintf(w, "gateway: %s (HTTP/JSON: POST /<package.Service>/<Method>)\n", d.GatewayURL())
	if ex := d.CurlExamples(); len(ex) > 0 {
		fmt.Fprintf(w, "try:\n  %s\n", strings.Join(ex, "\n  "))
	}
	if caps.Mesh != nil {
		for _, l := range caps.Mesh.MeshLines() {
			fmt.Fprintf(w, "%s\n", l)
		}
	}
}

// MeshDescriber is a deployment (Capabilities.Mesh) with mesh features that says where to see
// them (credentials, backends' UIs), one line each, for Describe.
type MeshDescriber interface {
	MeshLines() []string
}

// Describer is a Deployment (Capabilities.Describer) with more to say in Describe, such as the
// netns deployer's hosts and links.
type Describer interface {
	DescribeMore(w io.Writer)
}
