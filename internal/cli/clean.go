package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/experiment"
	"github.com/svclab/svclab/internal/tempdir"
)

func init() {
	rootCmd.AddCommand(newCleanCmd())
	// Every command starts by removing what dead svclab processes left in
	// $TMPDIR (sockets, HDR logs), so a kill -9 costs nothing for long; a
	// live process's state is never touched. The hidden host command is
	// started by a live deployer many times over and has nothing to add.
	rootCmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Hidden || cmd.Name() == "clean" {
			return nil
		}
		if _, _, err := sweepTemp(); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "svclab: warning:", err)
		}
		if _, err := backing.Sweep(); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "svclab: warning:", err)
		}
		if _, err := cgroup.Sweep(); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "svclab: warning:", err)
		}
		return nil
	}
	// Each command's own temp state and cgroups go when it ends, error or
	// not.
	cobra.OnFinalize(func() { _ = tempdir.RemoveOwn(); _ = cgroup.RemoveOwn() })
}

func newCleanCmd() *cobra.Command {
	var kubeToo bool
	var kctx string
	c := &cobra.Command{
		Use:   "clean [RESULTS_DIR...]",
		Short: "Remove temporary state left by svclab processes that died",
		Long: `clean removes what svclab processes killed with -9 (or by a crash) left
behind, and lists it:

  - in $TMPDIR, each process's directory svclab-PID-*/ (deployments' unix
    sockets and control sockets, the load generator's HDR logs) whose owner
    process is dead, after killing the nginx processes (sidecars' workers)
    still running in it;
  - in each RESULTS_DIR given (an experiment's results directory, or a
    directory of them such as results/), the runs in flight runs/.tmp-ID/
    whose svclab is dead; svclab run --resume does this too;
  - the control groups svclab/PID-START/ (cgroup v1: under each of the
    cpu, cpuacct, cpuset and memory hierarchies) of svclab processes that
    are dead, after killing anything still in them;
  - the network namespaces of the netns deployer (svclab-PID-*, with
    their veths, bridge and shaping) whose svclab is dead (needs root);
  - with --kube, the namespaces of kube runs (labelled
    app.kubernetes.io/managed-by=svclab, made from this machine) whose
    svclab is dead, on the cluster of the kubeconfig's current context or
    --context.

Each directory records the PID and start time of its owner, so state of a
live process is never removed. Every svclab command does the $TMPDIR and cgroup parts
when it starts; clean does it on demand.`,
		Example: `  svclab clean
  svclab clean results/
  svclab clean --kube --context prod-lab`,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := clean(cmd.OutOrStdout(), args)
			if kubeToo {
				_, kerr := cleanKube(cmd.Context(), cmd.OutOrStdout(), kctx)
				err = errors.Join(err, kerr)
			}
			return err
		},
	}
	c.Flags().BoolVar(&kubeToo, "kube", false, "also delete the namespaces of kube runs whose svclab is dead")
	c.Flags().StringVar(&kctx, "context", "", "the kubeconfig context of --kube (default: the current one)")
	return c
}

func clean(w io.Writer, resultsDirs []string) error {
	removed, killed, err := sweepTemp()
	errs := []error{err}
	n := len(removed)
	for _, k := range killed {
		fmt.Fprintf(w, "killed nginx, process group %d, still running in %s\n", k.PGID, k.Dir)
	}
	dbs, err := backing.Sweep()
	errs = append(errs, err)
	n += len(dbs)
	for _, r := range dbs {
		fmt.Fprintf(w, "removed database cluster %s\n", r)
	}
	for _, r := range removed {
		fmt.Fprintf(w, "removed %s (its svclab, %s, is gone)\n", r.Path, r.Owner)
	}
	swept, err := deploy.Sweep()
	errs = append(errs, err)
	n += len(swept)
	for _, r := range swept {
		fmt.Fprintf(w, "removed %s (its svclab is gone)\n", r)
	}
	groups, err := cgroup.Sweep()
	errs = append(errs, err)
	n += len(groups)
	for _, g := range groups {
		fmt.Fprintf(w, "removed cgroup %s and the groups in it (its svclab, %s, is gone)\n", g.Path, g.Owner)
	}
	for _, dir := range resultsDirs {
		exps, err := experiments(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, exp := range exps {
			runs, err := experiment.CleanStore(exp)
			errs = append(errs, err)
			n += len(runs)
			for _, r := range runs {
				fmt.Fprintf(w, "removed %s (a run in flight when its svclab died)\n", r)
			}
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "nothing to clean")
	}
	return errors.Join(errs...)
}

// sweepTemp removes the process directories in $TMPDIR whose svclab is
// dead, after killing the nginx processes still running in them: the
// proxies' workers, which outlive their master when it could not act on
// its parent-death signal (sidecar.DeathSignal).
func sweepTemp() ([]tempdir.Removed, []sidecar.Orphan, error) {
	var killed []sidecar.Orphan
	removed, err := tempdir.SweepPrefix("", tempdir.Prefix, func(dir string) int {
		killed = append(killed, sidecar.KillOrphans(dir)...)
		return 0
	})
	return removed, killed, err
}

// experiments returns dir when it is an experiment's results directory,
// or the experiments' directories directly inside it.
func experiments(dir string) ([]string, error) {
	isExp := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "experiment.json"))
		return err == nil
	}
	if isExp(dir) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, usageError{fmt.Errorf("clean %s: %w", dir, err)}
	}
	var out []string
	for _, e := range entries {
		if d := filepath.Join(dir, e.Name()); e.IsDir() && isExp(d) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, usageError{fmt.Errorf("clean %s: not a results directory (no experiment.json in it or in its subdirectories)", dir)}
	}
	return out, nil
}
