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

	"github.com/svclab/svclab/internal/english"
)

// Foreground writes where everything of d runs and a ready-to-paste curl
// command to w, and keeps d up until ctx ends (Ctrl-C) or a process exits;
// then it stops d. It is `svclab up`, for any deployer.
func Foreground(ctx context.Context, d Deployment, w io.Writer) error {
	wctx, cancel := Watch(ctx, d)
	defer cancel(nil)
	return Hold(wctx, d, w)
}

// Watch returns a context that ends with ctx, or as soon as a process of
// d exits before Stop: its cause is then that process's *ExitError, whose
// output is complete. cancel ends the watch.
func Watch(ctx context.Context, d Deployment) (context.Context, context.CancelCauseFunc) {
	wctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case p := <-d.Exited():
			<-p.Done()
			cancel(p.Exit())
		case <-wctx.Done():
		}
	}()
	return wctx, cancel
}

// Crash is the *ExitError that ended a context of Watch, nil when none
// did.
func Crash(ctx context.Context) *ExitError {
	var e *ExitError
	if errors.As(context.Cause(ctx), &e) {
		return e
	}
	return nil
}

// Hold describes d on w, keeps it up until ctx ends and stops it. When a
// process's exit ended ctx (Watch), that exit is the error.
func Hold(ctx context.Context, d Deployment, w io.Writer) error {
	Describe(w, d)
	fmt.Fprintln(w, "Ctrl-C (or SIGTERM) stops every process of the deployment.")
	<-ctx.Done()
	crashed := Crash(ctx)
	// ctx has ended; Stop still needs its grace period, which the
	// deployer bounds.
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

// Describe writes d's processes, entry, gateway and curl examples; a
// deployment of programs (Capabilities.Programs) has no gateway.
func Describe(w io.Writer, d Deployment) {
	topo := d.Topology()
	procs := d.Processes()
	if len(topo.Groups) == 0 {
		// A system svclab did not start (the external deployer): it has
		// no groups, components or gateway of svclab's to show.
		describeSystem(w, d, procs)
		return
	}
	caps := d.Capabilities()
	if caps.Programs != nil {
		var ps []string
		for name, proto := range caps.Programs.Protocols() {
			ps = append(ps, name+" ("+proto+")")
		}
		slices.Sort(ps)
		fmt.Fprintf(w, "deployment %s: app %s, programs %s, %s\n",
			d.ID(), topo.App.Name, strings.Join(ps, ", "), english.Count(len(procs), "process"))
	} else {
		fmt.Fprintf(w, "deployment %s: app %s, placement %s, transport %s, %s\n",
			d.ID(), topo.App.Name, topo.Placement, topo.Transport, english.Count(len(procs), "process"))
	}
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
	if caps.Describer != nil {
		caps.Describer.DescribeMore(w)
	}
	fmt.Fprintf(w, "entry:   %s (component %s)\n", d.Entry(), topo.Entry)
	if caps.Programs == nil {
		fmt.Fprintf(w, "gateway: %s (HTTP/JSON: POST /<package.Service>/<Method>)\n", d.GatewayURL())
	}
	describeTry(w, d)
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

// ProgramLister is a deployment (Capabilities.Programs) whose components
// are programs of their own, each speaking its own protocol, with no
// svclab host, transport or gateway between them.
type ProgramLister interface {
	// Protocols maps each component to what its program speaks.
	Protocols() map[string]string
}

// Describer is a Deployment (Capabilities.Describer) with more to say in Describe, such as the
// netns deployer's hosts and links.
type Describer interface {
	DescribeMore(w io.Writer)
}

// describeSystem describes a deployment of a system that runs on its own:
// where its entry is, and the processes sampled for it.
func describeSystem(w io.Writer, d Deployment, procs []Process) {
	topo := d.Topology()
	fmt.Fprintf(w, "deployment %s: a system svclab did not start (deployer %s), over %s, %s sampled\n",
		d.ID(), topo.App.Name, topo.Transport, english.Count(len(procs), "process"))
	for _, proc := range procs {
		info := proc.Info()
		fmt.Fprintf(w, "  %s\tpid %d\n", info.Name, info.PID)
	}
	fmt.Fprintf(w, "entry:   %s\n", d.GatewayURL())
	describeTry(w, d)
}

// describeTry prints the deployment's ready-to-paste calls of its entry.
func describeTry(w io.Writer, d Deployment) {
	if ex := d.CurlExamples(); len(ex) > 0 {
		fmt.Fprintf(w, "try:\n  %s\n", strings.Join(ex, "\n  "))
	}
}
