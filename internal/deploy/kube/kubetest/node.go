package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/tempdir"
)

// The real node: a kubelet on containerd and runc, with a CNI bridge,
// kube-proxy in iptables mode and a DNS server of the harness's own
// (dns.go), where kwok's nodes only pretend. Pods run: probes, logs, the
// network between pods and Services, and the kubelet's resource metrics
// are real.
//
// One machine holds one real node at a time: kube-proxy's iptables
// chains (KUBE-SERVICES and the rest) are the machine's, and two
// kube-proxies would rewrite each other's. Its files live in NodeDir,
// whose lock (NodeDir + ".lock", held while the node runs) says whether
// one runs; whatever a killed harness left is swept (sweep.go) by the
// next start, or by `make cluster-stop`.

// NodeBinaries are the node agents `make cluster` and `make test` build
// beside the control plane (the same tools module, one go build).
var NodeBinaries = []string{"kubelet", "kube-proxy"}

// NodeName is the real node's name and hostname label.
const NodeName = "svclab-node"

// NodeDir holds the real node's containerd, kubelet and CNI state. It is
// fixed, not a temp dir, so that a later start finds what a killed one
// left: mounts, network namespaces and the containers' processes.
const NodeDir = "/var/lib/svclab-node"

// Image is the tag of svclab's image in the real node's containerd
// (`svclab image --tarball`, imported without a registry): a spec's
// deploy.kube.image on the real node. It is svclab:dev, the default
// image of a build without a version, so an unversioned svclab needs no
// deploy.kube.image at all.
const Image = "svclab:dev"

// PauseImage is the pod sandbox's image (tools/kube/pause), imported as
// svclab's is: registry.k8s.io's cannot be pulled here.
const PauseImage = "svclab.local/pause:1"

// The node's networks: pods on a bridge of their own, the gateway (the
// host's side, where the DNS server listens) its first address. Services
// are the API server's --service-cluster-ip-range.
const (
	bridgeName  = "svclab-node0"
	podSubnet   = "10.79.0.0/24"
	gatewayIP   = "10.79.0.1"
	serviceCIDR = "10.96.0.0/16"
)

// CgroupRoot is the kubelet's cgroup root: every pod's cgroup is under
// it, in each hierarchy, so the sweep finds them all.
const CgroupRoot = "svclab-node"

// ErrNoNode is returned when this machine cannot run the real node
// (not root, containerd, runc or the CNI plugins missing): tests skip.
var ErrNoNode = errors.New("kubetest: no real node on this machine")

// nodePrograms are the Debian packages' programs the node needs, where
// Debian puts them (scripts/system-deps.sh installs them).
var nodePrograms = []struct{ path, pkg string }{
	{"/usr/bin/containerd", "containerd"},
	{"/usr/bin/containerd-shim-runc-v2", "containerd"},
	{"/usr/bin/ctr", "containerd"},
	{"/usr/sbin/runc", "runc"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"/usr/lib/cni/host-local", "containernetworking-plugins"},
	{"/usr/lib/cni/loopback", "containernetworking-plugins"},
	{"/usr/sbin/iptables", "iptables"},
}

// nodeReady says why the real node cannot start: this machine cannot run
// it (NodeAvailable), or its agents are not built in tools.
func nodeReady(tools string) error {
	if err := NodeAvailable(); err != nil {
		return err
	}
	for _, b := range NodeBinaries {
		if st, err := os.Stat(filepath.Join(tools, b)); err != nil || st.Mode()&0o111 == 0 {
			return fmt.Errorf("%w: %s missing in %s; `make cluster` builds it", ErrNoTools, b, tools)
		}
	}
	return nil
}

// NodeAvailable says why this machine cannot run the real node, or nil.
func NodeAvailable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it needs root (containerd, runc, the CNI bridge and kube-proxy's iptables rules)", ErrNoNode)
	}
	var missing []string
	for _, p := range nodePrograms {
		if st, err := os.Stat(p.path); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, p.path+" (Debian's "+p.pkg+")")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s; `sudo scripts/system-deps.sh test` installs them", ErrNoNode, strings.Join(missing, ", "))
	}
	return nil
}

// node is the real node's state within a Cluster.
type node struct {
	lock *os.File
	ip   string
	dns  *dnsServer
}

// startNode starts containerd, the kubelet and kube-proxy against the
// control plane c runs, imports the images once made, and waits for the
// node to be Ready. It takes NodeDir's lock first and sweeps what a
// killed harness left there. Start has checked the machine (nodeReady).
func (c *Cluster) startNode(ctx context.Context, tools string, f files, ports []int, images *pendingImages, opts Options) error {
	lock, err := lockNode(opts.NodeWait)
	if err != nil {
		return err
	}
	n := &node{lock: lock}
	c.node = n
	if err := sweep(); err != nil {
		return fmt.Errorf("kubetest: sweep the last real node: %w", err)
	}
	if n.ip, err = nodeIP(); err != nil {
		return err
	}
	for _, d := range []string{"containerd", "cni", "kubelet"} {
		if err := os.MkdirAll(filepath.Join(NodeDir, d), 0o700); err != nil {
			return fmt.Errorf("kubetest: %w", err)
		}
	}
	if err := writeOwner(); err != nil {
		return err
	}
	if err := saveSysctls(); err != nil {
		return err
	}
	if _, err := setSysctls(map[string]string{
		// Pods reach Services through the host: forwarded, and a reply
		// bridged between two pods still passes iptables (kube-proxy's
		// DNAT undone).
		"net/ipv4/ip_forward":                "1",
		"net/bridge/bridge-nf-call-iptables": "1",
	}); err != nil {
		return err
	}
	if err := makeBridge(); err != nil {
		return err
	}
	if err := makeCgroupRoot(); err != nil {
		return err
	}
	sock := filepath.Join(NodeDir, "containerd.sock")
	cfg, err := writeNodeFiles(n, f, c.Kubeconfig, sock, ports)
	if err != nil {
		return err
	}
	if err := c.start("/usr/bin", "containerd", "--config", cfg.containerd, "--log-level", "warn"); err != nil {
		return err
	}
	if err := c.waitSocket(ctx, "containerd", sock); err != nil {
		return err
	}
	if err := c.importImages(ctx, sock, images.wait(), opts.SandboxImageOnly); err != nil {
		return err
	}
	if n.dns, err = startDNS(c.Client, net.JoinHostPort(gatewayIP, "53")); err != nil {
		return err
	}
	if err := c.start(tools, "kubelet",
		"--config="+cfg.kubelet,
		"--kubeconfig="+c.Kubeconfig,
		"--root-dir="+filepath.Join(NodeDir, "kubelet"),
		"--hostname-override="+NodeName,
		"--node-ip="+n.ip,
		"--node-labels=svclab.dev/kubetest-node=real",
		// cAdvisor finds the containers' image filesystem through containerd.
		"--containerd="+sock,
		"--v=1"); err != nil {
		return err
	}
	if err := c.start(tools, "kube-proxy", "--config="+cfg.proxy, "--v=1"); err != nil {
		return err
	}
	return c.waitNode(ctx)
}

// nodeFiles are the configuration files of the node's programs.
type nodeFiles struct{ containerd, kubelet, proxy string }

func writeNodeFiles(n *node, f files, kubeconfig, sock string, ports []int) (nodeFiles, error) {
	var out nodeFiles
	containerd := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
# Snapshotters and plugins this node has no use for, which would
# otherwise probe the machine at every start.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # The pods' network namespaces are mounts under the state dir, where
  # the sweep finds them, not in the machine's /var/run/netns.
  netns_mounts_under_state_dir = true
  # No process here may lower its oom_score_adj (no CAP_SYS_RESOURCE, as
  # in a container): the kubelet's -998 for a sandbox is clamped to
  # containerd's own instead of failing runc.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        # runc's state, which would be /run/containerd/runc.
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[5]q
`, filepath.Join(NodeDir, "containerd", "root"), filepath.Join(NodeDir, "containerd", "state"), sock, PauseImage, filepath.Join(NodeDir, "cni"), filepath.Join(NodeDir, "runc"))
	cni := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %[1]q,
  "plugins": [{
    "type": "bridge", "bridge": %[2]q, "isGateway": true, "ipMasq": true, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %[3]q, "gateway": %[4]q}]],
             "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %[5]q}
  }]
}
`, cniNetwork, bridgeName, podSubnet, gatewayIP, filepath.Join(NodeDir, "cni-ipam"))
	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine mounts cgroup v1, which kubelets from 1.35 refuse by default.
# containerd 1.6 has no RuntimeConfig call: the kubelet falls back to
# cgroupDriver here (until 1.38, KEP-4033).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%[1]s
containerRuntimeEndpoint: unix://%[2]s
address: %[3]s
port: %[4]d
readOnlyPort: 0
healthzPort: 0
# The API server (its --kubelet-client-certificate) and metrics-server
# present the administrator's certificate, of the harness's CA.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[5]q}
authorization: {mode: AlwaysAllow}
clusterDNS: [%[6]q]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
failSwapOn: false
# The images cannot be pulled again: never collect them, and evict no
# pod for a machine's full disk or busy memory, which are not the test's.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
serializeImagePulls: false
`, CgroupRoot, sock, n.ip, ports[0], f.ca, gatewayIP)
	proxy := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %[1]q}
mode: iptables
hostnameOverride: %[2]s
bindAddress: %[3]s
clusterCIDR: %[4]s
healthzBindAddress: 127.0.0.1:%[5]d
metricsBindAddress: 127.0.0.1:%[6]d
# Leave the machine's conntrack settings as they are (0: unchanged), and
# route_localnet off: no NodePort on loopback.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`, kubeconfig, NodeName, n.ip, podSubnet, ports[1], ports[2])
	for _, w := range []struct {
		name, text string
		p          *string
	}{
		{"containerd.toml", containerd, &out.containerd},
		{"cni/10-svclab.conflist", cni, nil},
		{"kubelet.yaml", kubelet, &out.kubelet},
		{"kube-proxy.yaml", proxy, &out.proxy},
	} {
		p := filepath.Join(NodeDir, w.name)
		if err := os.WriteFile(p, []byte(w.text), 0o600); err != nil {
			return out, fmt.Errorf("kubetest: write %s: %w", p, err)
		}
		if w.p != nil {
			*w.p = p
		}
	}
	return out, nil
}

// cniNetwork names the CNI network; the bridge plugin's masquerade rules
// carry it in their comments, which is how the sweep finds them.
const cniNetwork = "svclab-node"

// nodeIP is the machine's address on its default route: the node's
// InternalIP, where the API server and metrics-server reach the kubelet
// (the API server proxies to no loopback address).
func nodeIP() (string, error) {
	conn, err := net.Dial("udp4", "192.0.2.1:9") // no packet is sent
	if err == nil {
		defer conn.Close()
		if a, ok := conn.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsLoopback() {
			return a.IP.String(), nil
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("kubetest: the node's address: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() && !strings.HasPrefix(ipn.IP.String(), "10.79.") {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("%w: no IPv4 address but loopback, and the API server proxies to no loopback kubelet", ErrNoNode)
}

// setSysctls sets each /proc/sys key and returns the values it replaced.
func setSysctls(want map[string]string) (map[string]string, error) {
	old := map[string]string{}
	for k, v := range want {
		p := "/proc/sys/" + k
		b, err := os.ReadFile(p)
		if err != nil {
			return old, fmt.Errorf("kubetest: read %s: %w", p, err)
		}
		if cur := strings.TrimSpace(string(b)); cur != v {
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				return old, fmt.Errorf("kubetest: set %s: %w", p, err)
			}
			old[k] = cur
		}
	}
	return old, nil
}

// savedSysctls are the machine-wide settings the node changes: the
// harness sets the first two; kube-proxy may set the conntrack ones and
// route_localnet (its configuration asks it not to); the kubelet sets
// kernel.panic = 10, kernel.panic_on_oops = 1 and vm.overcommit_memory = 1
// (protectKernelDefaults: true would refuse to start instead). Their values
// before the node are kept in sysctlFile, outside NodeDir, until the
// sweep puts them back, so a killed harness's are restored too.
var savedSysctls = []string{
	"net/ipv4/ip_forward",
	"net/bridge/bridge-nf-call-iptables",
	"net/ipv4/conf/all/route_localnet",
	"net/netfilter/nf_conntrack_max",
	"net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"kernel/panic",
	"kernel/panic_on_oops",
	"vm/overcommit_memory",
}

const sysctlFile = NodeDir + ".sysctl"

// Sysctls reads the machine-wide settings a node changes and its stop
// or sweep puts back, for a test that compares them.
func Sysctls() map[string]string {
	out := map[string]string{}
	for _, k := range savedSysctls {
		if v, err := os.ReadFile("/proc/sys/" + k); err == nil {
			out[k] = strings.TrimSpace(string(v))
		}
	}
	return out
}

// saveSysctls writes the current values of savedSysctls to sysctlFile.
func saveSysctls() error {
	var b strings.Builder
	for k, v := range Sysctls() {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	if err := os.WriteFile(sysctlFile, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}

// restoreSysctls puts sysctlFile's values back and removes it.
func restoreSysctls() error {
	b, err := os.ReadFile(sysctlFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	old := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			old[k] = v
		}
	}
	if _, err := setSysctls(old); err != nil {
		return err
	}
	return os.Remove(sysctlFile)
}

// makeBridge makes the pods' bridge, with the gateway's address, before
// any pod: the DNS server listens there from the start. The bridge plugin
// takes it as it finds it.
func makeBridge() error {
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", gatewayIP + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("kubetest: ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// cgroupHierarchies lists the mounted cgroup v1 hierarchies (cpu,
// memory, ..., and the named systemd one), or the one v2 mount.
func cgroupHierarchies() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if st, err := os.Lstat(p); err == nil && st.IsDir() {
			var fs syscall.Statfs_t
			// cgroup v1's magic number; v2's own is not in this list.
			if syscall.Statfs(p, &fs) == nil && (fs.Type == 0x27e0eb || fs.Type == 0x63677270) {
				out = append(out, p)
			}
		}
	}
	return out
}

// makeCgroupRoot makes the kubelet's cgroup root in every hierarchy: the
// kubelet refuses a root that does not exist. A harness run at a lower
// CPU priority (make test runs it at nice 19 beside the timed tests)
// gives the root the CPU weight of its nice value, as svclab's own groups
// get (cgroup.NiceShares): the pods run in the kubelet's cgroups, where
// the harness's nice does not reach.
func makeCgroupRoot() error {
	shares := cgroup.NiceShares()
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, CgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("kubetest: cgroup root: %w", err)
		}
		if shares == 0 {
			continue
		}
		// cgroup v1's cpu hierarchy, or v2's one tree.
		for file, value := range map[string]uint64{"cpu.shares": shares, "cpu.weight": cgroup2.ConvertCPUSharesToCgroupV2Value(shares)} {
			p := filepath.Join(dir, file)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if err := os.WriteFile(p, []byte(strconv.FormatUint(value, 10)), 0o644); err != nil {
				return fmt.Errorf("kubetest: cgroup root's CPU weight: %w", err)
			}
		}
	}
	return nil
}

// waitSocket waits for a Unix socket to accept connections.
func (c *Cluster) waitSocket(ctx context.Context, name, sock string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	p := c.procs[len(c.procs)-1]
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-p.c.Done():
			return p.exitErr()
		case <-ctx.Done():
			return fmt.Errorf("kubetest: %s not listening on %s within %s:\n%s", name, sock, startTimeout, tail(p.log))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitNode waits for the real node to be Ready.
func (c *Cluster) waitNode(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	last := "not registered"
	for {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err == nil {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == corev1.ConditionTrue {
						c.Nodes = append(c.Nodes, NodeName)
						return nil
					}
					last = cond.Reason + ": " + cond.Message
				}
			}
		}
		if err := c.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubetest: node %s not Ready within %s (%s); kubelet:\n%s", NodeName, startTimeout, last, c.Log("kubelet"))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// stopNode stops the node's programs and sweeps everything they made,
// (and gives the machine's sysctls back their values), then gives the
// lock up. It fails when anything of the node is left (NodeLeftovers).
func (c *Cluster) stopNode() error {
	n := c.node
	if n == nil {
		return nil
	}
	var errs []error
	if n.dns != nil {
		n.dns.Close()
	}
	// The kubelet first, so that it restarts no container the sweep kills.
	for _, name := range []string{"kubelet", "kube-proxy"} {
		if err := c.stopProc(name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := sweep(); err != nil {
		errs = append(errs, err)
	}
	if err := c.stopProc("containerd"); err != nil {
		errs = append(errs, err)
	}
	if err := sweep(); err != nil {
		errs = append(errs, err)
	}
	// Checked before the lock goes: another harness waiting for it
	// starts a node of its own at once.
	if left := NodeLeftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left on the machine after the stop:\n  %s", strings.Join(left, "\n  ")))
	}
	n.lock.Close()
	c.node = nil
	return errors.Join(errs...)
}

// stopProc stops one process of the cluster by name, if it runs.
func (c *Cluster) stopProc(name string) error {
	for i, p := range c.procs {
		if p.name == name {
			c.procs = append(c.procs[:i:i], c.procs[i+1:]...)
			if err := p.c.Stop(context.Background(), syscall.SIGTERM, 10*time.Second); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
	}
	return nil
}

// lockNode takes NodeDir's lock, waiting up to lockWait for another
// harness's node to stop (the real-node tests of two packages take turns),
// or says who holds it.
func lockNode(lockWait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(NodeDir), 0o755); err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	f, err := os.OpenFile(NodeDir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kubetest: node lock: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			o, _ := NodeOwner()
			return nil, fmt.Errorf("%w: a real node runs already (%s; `make cluster-stop` stops make cluster's)", ErrNodeBusy, o)
		}
		time.Sleep(time.Second)
	}
}

// ErrNodeBusy is returned when another harness's real node runs on this
// machine.
var ErrNodeBusy = errors.New("kubetest: the real node is busy")

// writeOwner records the process that runs the node, for
// `make cluster-stop` and for a second start's error.
func writeOwner() error {
	p := filepath.Join(NodeDir, "owner")
	o := tempdir.Self()
	if err := os.WriteFile(p, fmt.Appendf(nil, "%d %d\n", o.PID, o.Start), 0o600); err != nil {
		return fmt.Errorf("kubetest: write %s: %w", p, err)
	}
	return nil
}

// NodeOwner is the process that runs the real node, from NodeDir, and
// whether it still runs.
func NodeOwner() (tempdir.Owner, bool) {
	var o tempdir.Owner
	b, err := os.ReadFile(filepath.Join(NodeDir, "owner"))
	if err != nil {
		return o, false
	}
	if _, err := fmt.Sscan(string(b), &o.PID, &o.Start); err != nil {
		return o, false
	}
	return o, o.Alive()
}

// NodeLock is the real node's lock (one machine runs one node) held by
// a caller that runs none: a test that looks at what a harness it killed
// left, before another harness's start sweeps it.
type NodeLock struct{ f *os.File }

// WaitNodeLock waits, without a bound, for the real node's lock. A
// waiter blocked here gets it as soon as its holder lets it go, ahead
// of a harness's start, which tries once a second (lockNode).
func WaitNodeLock() (*NodeLock, error) {
	f, err := os.OpenFile(NodeDir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kubetest: node lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("kubetest: node lock: %w", err)
	}
	return &NodeLock{f: f}, nil
}

// Sweep is SweepNode under l.
func (l *NodeLock) Sweep() error { return sweep() }

// Release lets the lock go.
func (l *NodeLock) Release() { l.f.Close() }

// SweepNode removes what a real node whose harness was killed left on
// the machine (sweep.go). It fails when a node runs.
func SweepNode() error {
	lock, err := lockNode(0)
	if err != nil {
		return err
	}
	defer lock.Close()
	return sweep()
}
