// Command cluster starts and stops the one-node cluster of `make cluster`:
// the harness's control plane (package kubetest) and its real node, a
// kubelet on containerd with kube-proxy, the cluster's DNS and
// metrics-server, left running for `svclab run` with deploy.deployer =
// "kube".
//
//	cluster start [--tag svclab:VERSION]   start it; the last line printed is `export KUBECONFIG=...`
//	cluster stop                           stop it, and sweep what a killed one left
//
// start runs the cluster in a process of its own (`cluster serve`, in a
// session of its own, its output in $TMPDIR/svclab-cluster.log), which
// holds every program as a child and stops them all on SIGTERM; start
// returns once the node is Ready. stop signals that process and waits
// for it; when it was killed with -9 instead, stop sweeps what it left
// (its containers, mounts, iptables rules, bridge and cgroups), as the
// next start would.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/tempdir"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cluster start [--tag REF] | stop")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "start":
		err = start(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	case "stop":
		err = stop()
	default:
		err = fmt.Errorf("unknown command %q: start or stop", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// logPath is the serving process's output.
func logPath() string { return filepath.Join(os.TempDir(), "svclab-cluster.log") }

// readyPath is where the serving process writes the kubeconfig's path
// once the node is Ready, and on a second line the stand-in postgres
// image's tag (or nothing, without one).
func readyPath() string { return filepath.Join(os.TempDir(), "svclab-cluster.ready") }

// ready prints what readyPath holds: the stand-in postgres image, on
// stderr, then `export KUBECONFIG=...`, the last line, on stdout.
func ready(b []byte) {
	kubeconfig, pg, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if pg = strings.TrimSpace(pg); pg != "" {
		fmt.Fprintf(os.Stderr, "a backing PostgreSQL (the shop's) runs with --set deploy.kube.backing_images.postgres=%s, the node's stand-in for postgres:16 built from this machine's PostgreSQL (docs/KUBERNETES.md)\n", pg)
	}
	fmt.Printf("export KUBECONFIG=%s\n", kubeconfig)
}

func start(args []string) error {
	if o, alive := kubetest.NodeOwner(); alive && ours(o.PID) {
		if b, err := os.ReadFile(readyPath()); err == nil {
			fmt.Printf("the cluster runs already (%s)\n", o)
			ready(b)
			return nil
		}
	}
	if err := kubetest.NodeAvailable(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	os.Remove(readyPath())
	log, err := os.Create(logPath())
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(self, append([]string{"serve"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own session: make's terminal closing or ^C does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the cluster's process: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Fprintf(os.Stderr, "starting the cluster (pid %d, log %s): the control plane, containerd, the kubelet, kube-proxy, metrics-server; building svclab's image and a stand-in postgres image\n", cmd.Process.Pid, logPath())
	for {
		if b, err := os.ReadFile(readyPath()); err == nil {
			ready(b)
			return nil
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath())
			return fmt.Errorf("the cluster's process exited (%v):\n%s", err, b)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	tag := fs.String("tag", "", "another tag of svclab's image in the node's containerd (svclab:VERSION)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer cancel()
	defer tempdir.RemoveOwn()
	c, err := kubetest.Start(ctx, 0, kubetest.Options{Node: true})
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "cluster: stop:", err)
		}
		os.Remove(readyPath())
		fmt.Fprintln(os.Stderr, "cluster: stopped")
	}()
	if *tag != "" {
		if err := c.Tag(ctx, *tag); err != nil {
			return err
		}
	}
	if c.NoMetrics != "" {
		fmt.Fprintln(os.Stderr, "cluster:", c.NoMetrics)
	}
	if c.NoPostgres != "" {
		fmt.Fprintln(os.Stderr, "cluster:", c.NoPostgres)
	}
	if err := os.WriteFile(readyPath(), []byte(c.Kubeconfig+"\n"+c.PostgresImage+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cluster: ready, node %s, image %s; KUBECONFIG=%s\n", kubetest.NodeName, kubetest.Image, c.Kubeconfig)
	<-ctx.Done()
	return nil
}

// ours says whether pid is a `cluster serve`.
func ours(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(string(b), "\x00")
	return err == nil && len(args) > 1 && args[1] == "serve"
}

func stop() error {
	if os.Geteuid() != 0 {
		return errors.New("the cluster's node runs as root: stop it as root")
	}
	// Only make cluster's process is stopped; a test's node is the
	// test's (SweepNode then says it is busy).
	if o, alive := kubetest.NodeOwner(); alive && ours(o.PID) && syscall.Kill(o.PID, syscall.SIGTERM) == nil {
		deadline := time.Now().Add(2 * time.Minute)
		for o.Alive() {
			if time.Now().After(deadline) {
				return fmt.Errorf("the cluster's process (%s) still runs 2 minutes after SIGTERM", o)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	os.Remove(readyPath())
	// A process killed with -9 stopped nothing: sweep what it left.
	if err := kubetest.SweepNode(); err != nil {
		return err
	}
	if left := kubetest.NodeLeftovers(); len(left) > 0 {
		return fmt.Errorf("left after the stop:\n  %s", strings.Join(left, "\n  "))
	}
	// The log explains a cluster that runs or failed; a clean stop leaves
	// nothing, the log included.
	if err := os.Remove(logPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the cluster's log: %w", err)
	}
	fmt.Println("the cluster is stopped; nothing of it is left")
	return nil
}
