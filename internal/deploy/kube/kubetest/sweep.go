package kubetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/tempdir"
)

// sweep removes whatever a real node left on the machine: its processes
// (containers, containerd's shims, and containerd, the kubelet and
// kube-proxy of a harness killed with -9), its mounts (the pods'
// volumes and rootfs, the network namespaces), its iptables rules
// (kube-proxy's and the kubelet's KUBE- chains, the bridge plugin's
// masquerade), the bridge, its cgroups, and NodeDir. It is what a clean
// stop does once the programs have stopped, and what the next start does
// after a kill. Each step runs even when one before it failed.
func sweep() error {
	var errs []error
	// A harness killed with -9 (make cluster's, a test's) also left its
	// temp root: etcd's data, the cluster's keys and kubeconfig.
	if o, alive := NodeOwner(); !alive {
		if _, err := tempdir.SweepOwner("", o); err != nil {
			errs = append(errs, err)
		}
	}
	if err := killNodeProcs(); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(NodeDir); err != nil {
		errs = append(errs, err)
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		if err := removeRules(save); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		if out, err := exec.Command("ip", "link", "del", bridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %w: %s", bridgeName, err, out))
		}
	}
	if err := removeCgroups(); err != nil {
		errs = append(errs, err)
	}
	for _, s := range staleShimSockets() {
		if err := os.Remove(s); err != nil {
			errs = append(errs, err)
		}
	}
	// containerd makes these on the machine whatever its --root and
	// --state; another containerd may use them, so only empty ones go.
	for _, d := range []string{"s", "fifo", "runc/k8s.io", "runc", ""} {
		_ = os.Remove(filepath.Join(shimRunDir, d))
	}
	if err := os.RemoveAll(NodeDir); err != nil {
		errs = append(errs, err)
	}
	if err := restoreSysctls(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// NodeLeftovers lists what of a real node is still on the machine:
// processes, mounts, iptables chains, the bridge, cgroups. Empty after a
// clean stop or a sweep; tests check it.
func NodeLeftovers() []string {
	var out []string
	for _, pid := range nodePIDs() {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("process %d %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '})))
	}
	for _, m := range mountsUnder(NodeDir) {
		out = append(out, "mount "+m)
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		chains, rules := nodeRules(save)
		for _, c := range chains {
			out = append(out, save+" chain "+c)
		}
		for _, r := range rules {
			out = append(out, save+" rule "+r)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		out = append(out, "link "+bridgeName)
	}
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, CgroupRoot)); err == nil {
			out = append(out, "cgroup "+filepath.Join(h, CgroupRoot))
		}
	}
	if _, err := os.Stat(NodeDir); err == nil {
		out = append(out, "directory "+NodeDir)
	}
	for _, s := range staleShimSockets() {
		out = append(out, "socket "+s)
	}
	if _, err := os.Stat(sysctlFile); err == nil {
		out = append(out, "sysctls not restored, "+sysctlFile)
	}
	return out
}

// shimRunDir is where containerd 1.6's shims put their sockets, whatever
// containerd's --state (its defaults.DefaultStateDir).
const shimRunDir = "/run/containerd"

// staleShimSockets lists the shims' sockets that no process listens on
// any more: a killed shim's.
func staleShimSockets() []string {
	entries, _ := os.ReadDir(filepath.Join(shimRunDir, "s"))
	var out []string
	for _, e := range entries {
		p := filepath.Join(shimRunDir, "s", e.Name())
		conn, err := net.DialTimeout("unix", p, time.Second)
		if err == nil {
			conn.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			out = append(out, p)
		}
	}
	return out
}

// nodePIDs lists the processes of a real node: those in a cgroup under
// the kubelet's cgroup root (the pods' containers), and those whose
// command line names NodeDir (containerd and its shims, the kubelet,
// kube-proxy).
func nodePIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		if bytes.Contains(cmd, []byte(NodeDir+"/")) || bytes.Contains(cmd, []byte(NodeDir+"\x00")) {
			out = append(out, pid)
			continue
		}
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		for _, line := range strings.Split(string(cg), "\n") {
			// hierarchy-id:controllers:path
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && strings.HasPrefix(parts[2], "/"+CgroupRoot+"/") {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// killNodeProcs SIGKILLs the node's processes and waits until they are
// gone (a container's cgroup cannot be removed before).
func killNodeProcs() error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := nodePIDs()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still there 20 s after SIGKILL", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// Octal escapes (a space is \040) stay: NodeDir has none.
		if mp := fields[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out)
}

// unmountUnder detaches every mount under dir.
func unmountUnder(dir string) error {
	var errs []error
	for range 3 { // a mount may hide another at the same point
		ms := mountsUnder(dir)
		if len(ms) == 0 {
			return nil
		}
		errs = nil
		for _, m := range ms {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
			}
		}
	}
	if ms := mountsUnder(dir); len(ms) > 0 {
		errs = append(errs, fmt.Errorf("mounts left under %s: %v", dir, ms))
	}
	return errors.Join(errs...)
}

// nodeRules reads save's output (iptables-save, ip6tables-save) and
// returns the node's chains, as "table chain", and the rules of other
// chains that jump to them or carry the CNI network's comment, as
// "table rule". The node's chains are kube-proxy's and the kubelet's
// (KUBE-*) and the bridge plugin's (CNI-*) that its rules jump to.
func nodeRules(save string) (chains, rules []string) {
	out, err := exec.Command(save).Output()
	if err != nil {
		return nil, nil
	}
	table := ""
	ours := map[string]bool{}
	type rule struct{ table, text, chain, target string }
	var all []rule
	var declared []string
	comment := `name: \"` + cniNetwork + `\"`
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			name := strings.Fields(line[1:])[0]
			declared = append(declared, table+" "+name)
			if strings.HasPrefix(name, "KUBE-") {
				ours[table+" "+name] = true
			}
		case strings.HasPrefix(line, "-A "):
			f := strings.Fields(line)
			r := rule{table: table, text: line, chain: f[1]}
			if i := slices.Index(f, "-j"); i >= 0 && i+1 < len(f) {
				r.target = f[i+1]
			}
			if strings.Contains(line, comment) && r.target != "" {
				ours[table+" "+r.target] = true
			}
			all = append(all, r)
		}
	}
	for _, d := range declared {
		if ours[d] {
			chains = append(chains, d)
		}
	}
	for _, r := range all {
		if !ours[r.table+" "+r.chain] && (ours[r.table+" "+r.target] || strings.Contains(r.text, comment)) {
			rules = append(rules, r.table+" "+r.text)
		}
	}
	return chains, rules
}

// removeRules deletes the node's rules and chains in one
// iptables-restore --noflush per table, which leaves every other rule.
func removeRules(save string) error {
	chains, rules := nodeRules(save)
	if len(chains) == 0 && len(rules) == 0 {
		return nil
	}
	byTable := map[string][]string{}
	var tables []string
	add := func(table, line string) {
		if _, ok := byTable[table]; !ok {
			tables = append(tables, table)
		}
		byTable[table] = append(byTable[table], line)
	}
	for _, r := range rules {
		table, text, _ := strings.Cut(r, " ")
		add(table, "-D"+strings.TrimPrefix(text, "-A"))
	}
	for _, c := range chains {
		table, name, _ := strings.Cut(c, " ")
		add(table, "-F "+name)
	}
	for _, c := range chains {
		table, name, _ := strings.Cut(c, " ")
		add(table, "-X "+name)
	}
	var in strings.Builder
	for _, t := range tables {
		fmt.Fprintf(&in, "*%s\n%s\nCOMMIT\n", t, strings.Join(byTable[t], "\n"))
	}
	restore := strings.Replace(save, "-save", "-restore", 1)
	cmd := exec.Command(restore, "--noflush")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s\n%s", restore, err, out, in.String())
	}
	return nil
}

// removeCgroups removes the kubelet's cgroup root and everything under it
// in every hierarchy, deepest first.
func removeCgroups() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		root := filepath.Join(h, CgroupRoot)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for range 50 { // a killed process leaves its cgroup a moment later
				if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
