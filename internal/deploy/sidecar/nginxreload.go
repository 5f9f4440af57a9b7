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

	"github.com/svclab/svclab/internal/procgroup"
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
// returns once a worker on the new configuration runs and the old one has
// finished its calls and exited.
func (n nginx) Update(c Config, _ []Listener) error {
	text, err := n.Render(c)
	if err != nil {
		return err
	}
	master, err := masterPID(c.Dir)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	before, err := workers(master)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	if err := writeAtomic(filepath.Join(c.Dir, n.ConfigFile()), text); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	// The PID is the pid file's: the signal goes to it only while it is
	// the master running in c.Dir (SIGHUP ends a process that does not
	// catch it).
	if err := procgroup.SignalChecked(master, syscall.SIGHUP, func(pid int) bool { return runsIn(pid, c.Dir) }); err != nil {
		return fmt.Errorf("reload: signal the master (pid %d): %w", master, err)
	}
	// Done once a new worker runs and the old ones have left: until its
	// HTTP/2 clients read its GOAWAY, an old worker still takes new
	// streams on their connections and sends them to the old upstreams,
	// one of which may be a replica about to stop.
	deadline := time.Now().Add(nginxReloadTimeout)
	for time.Now().Before(deadline) {
		now, err := workers(master)
		if err != nil {
			return fmt.Errorf("reload: %w", err)
		}
		fresh, old := false, false
		for _, pid := range now {
			if slices.Contains(before, pid) {
				old = true
			} else {
				fresh = true
			}
		}
		if fresh && !old {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("reload: after %s, the old worker still runs or no new one does (the master, pid %d, logs why on its stderr)", nginxReloadTimeout, master)
}

// Forks reports whether k's program does its work in child processes,
// which a deployer samples with it (nginx's workers).
func Forks(k Kind) bool { _, ok := k.(nginx); return ok }

// workers are the pids of the nginx master's children. (procstat.Children
// reads the same file for the deployer; this package sits below the
// deploy package, which procstat needs.)
func workers(master int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", master, master))
	if err != nil {
		return nil, fmt.Errorf("the workers of nginx (pid %d): %w", master, err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// runsIn reports whether process pid's working directory is dir: every
// nginx svclab starts runs in its proxy's directory.
func runsIn(pid int, dir string) bool {
	cwd, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		return false
	}
	d, err := os.Stat(dir)
	return err == nil && os.SameFile(cwd, d)
}
