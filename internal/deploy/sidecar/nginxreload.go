package sidecar

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// nginx follows endpoint changes by a graceful reload: Update rewrites the
// configuration and sends the master SIGHUP (what `nginx -s reload` does),
// upon which the master starts a worker on the new configuration and asks
// the old one to quit gracefully: it stops accepting, sends HTTP/2 clients
// GOAWAY, closes idle keep-alive connections and finishes the calls in
// flight. nginx open source has no API to change an upstream block while
// it runs (that is NGINX Plus's), and re-resolving names does not carry
// ports.

// nginxReloadTimeout bounds the wait for the new worker.
const nginxReloadTimeout = 10 * time.Second

// Update rewrites c's configuration and reloads the running nginx. It
// returns once a worker on the new configuration runs.
func (n nginx) Update(c Config, _ []Listener) error {
	text, err := n.Render(c)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, "nginx.pid"))
	if err != nil {
		return fmt.Errorf("reload: the master's pid: %w", err)
	}
	master, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("reload: the master's pid file holds %q", b)
	}
	before, err := children(master)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	if err := writeAtomic(filepath.Join(c.Dir, n.ConfigFile()), text); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	if err := syscall.Kill(master, syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload: signal the master (pid %d): %w", master, err)
	}
	deadline := time.Now().Add(nginxReloadTimeout)
	for time.Now().Before(deadline) {
		now, err := children(master)
		if err != nil {
			return fmt.Errorf("reload: %w", err)
		}
		for _, pid := range now {
			if !slices.Contains(before, pid) {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("reload: no new worker within %s (the master, pid %d, logs why on its stderr)", nginxReloadTimeout, master)
}

// children are the pids of parent's child processes.
func children(parent int) ([]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, p := range procs {
		st, err := p.Stat()
		if err == nil && st.PPID == parent {
			out = append(out, p.PID)
		}
	}
	return out, nil
}

// Children are the live worker processes of the nginx master pid, which a
// deployer samples beside the master; nil when there are none.
func Children(pid int) []int {
	out, _ := children(pid)
	return out
}
