// Package kubetest starts a real Kubernetes control plane on loopback for
// tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok, whose fake nodes let pods be scheduled and marked Running without
// a kubelet. The binaries are the ones `make kube-tools` builds from the Go
// module proxy (tools/kube) into the per-user cache.
//
// A control plane takes seconds to start, so a test binary starts one in
// TestMain (Main) and its tests share it (Get), each in namespaces of its
// own. Everything it starts runs in its own process group with a
// parent-death SIGKILL (internal/deploy/child), and its files (certificates,
// keys, etcd's data, logs) live in the test process's owner-marked temp dir
// (internal/tempdir), so a test binary killed with -9 leaves no process, and
// the next svclab sweeps its files.
package kubetest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/svclab/svclab/internal/deploy/child"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/tempdir"
)

// Version is the Kubernetes version of the control plane `make kube-tools`
// builds; the cache directory is named after it.
const Version = "v1.36.3"

// ToolsEnv names the directory of the binaries; `make test` sets it, and a
// missing binary is then an error rather than a skip.
const ToolsEnv = "SVCLAB_KUBE_TOOLS"

// Binaries are the programs the harness starts.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// Contexts of the kubeconfig the harness writes.
const (
	// AdminContext is a cluster administrator (group system:masters).
	AdminContext = "svclab-kubetest"
	// NoRBACContext is an authenticated user with no permission at all,
	// for tests of a run without the RBAC it needs.
	NoRBACContext = "svclab-kubetest-norbac"
	// NoRBACUser is NoRBACContext's user name, for a test that grants it
	// a Role.
	NoRBACUser = "kubetest-norbac"
)

// FakeNodeAnnotation marks the nodes kwok manages.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// Images that kwok's stages (stages.yaml) give the kubelet's status for a
// fault: a pod of UnpullableImage stays Pending in ImagePullBackOff, one of
// NeverReadyImage runs but never becomes Ready (its readiness probe, as
// it were, fails). Every other image is Ready once scheduled.
const (
	UnpullableImage = "kubetest.invalid/unpullable:v1"
	NeverReadyImage = "kubetest.invalid/never-ready:v1"
)

// stages is kwok's pod lifecycle for the harness.
//
//go:embed stages.yaml
var stages []byte

// ErrNoTools is returned by ToolsDir when a binary is missing and the
// caller did not ask for them (ToolsEnv unset): tests skip.
var ErrNoTools = errors.New("kubetest: the control plane is not built")

// toolsPath is the directory of the binaries: $SVCLAB_KUBE_TOOLS, or
// ${XDG_CACHE_HOME:-~/.cache}/svclab/kube-<Version>; "" without a cache
// directory.
func toolsPath() string {
	if dir := os.Getenv(ToolsEnv); dir != "" {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "svclab", "kube-"+Version)
}

// ToolsDir returns toolsPath when it holds every binary of Binaries.
func ToolsDir() (string, error) {
	asked := os.Getenv(ToolsEnv) != ""
	dir := toolsPath()
	if dir == "" {
		return "", fmt.Errorf("%w: no cache directory", ErrNoTools)
	}
	var missing []string
	for _, b := range Binaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return dir, nil
	}
	err := fmt.Errorf("%s missing in %s; `make kube-tools` builds them", strings.Join(missing, ", "), dir)
	if asked {
		return "", fmt.Errorf("kubetest: %s=%s: %w", ToolsEnv, dir, err)
	}
	return "", fmt.Errorf("%w: %w", ErrNoTools, err)
}

// Cluster is a running control plane.
type Cluster struct {
	// Dir holds the certificates, keys, kubeconfig, etcd data and logs.
	Dir string
	// Kubeconfig is the path of a kubeconfig with AdminContext (current)
	// and NoRBACContext.
	Kubeconfig string
	// Server is the API server's URL.
	Server string
	// Config and Client are the administrator's.
	Config *rest.Config
	Client kubernetes.Interface
	// Nodes are the names of the kwok nodes, labelled
	// "svclab.dev/kubetest-node" with their index.
	Nodes []string
	// NoMetrics says why the cluster serves no metrics API (metrics.k8s.io),
	// or is "" when metrics-server serves it (metrics.go).
	NoMetrics string
	// PostgresImage is the real node's stand-in for the official postgres
	// image (postgres.go), for deploy.kube.backing_images.postgres; or ""
	// and NoPostgres says why there is none.
	PostgresImage, NoPostgres string

	procs []*process
	node  *node
}

type process struct {
	name string
	log  string
	c    *child.Child
	// stateless: the process keeps nothing a kill could lose
	// (metrics-server holds its samples in memory), so a kill after the
	// grace is no error of Stop.
	stateless bool
}

// Options changes what Start starts.
type Options struct {
	// NoMetrics starts no metrics-server even where it is built, for a
	// test of a cluster without the metrics API beside one with it.
	NoMetrics bool
	// Node adds the real node (node.go): a kubelet on containerd, with
	// kube-proxy and the cluster's DNS, where pods run. It needs root,
	// Debian's containerd, runc and CNI plugins, and the kubelet and
	// kube-proxy beside the control plane; without them Start returns
	// ErrNoNode or ErrNoTools.
	Node bool
	// SandboxImageOnly imports only the pod sandbox's image (PauseImage)
	// into the real node, not svclab's nor the stand-in postgres, which
	// take seconds to build: for a harness whose pods run neither.
	SandboxImageOnly bool
	// NodeWait is how long to wait for another harness's real node to
	// stop (one machine runs one); then Start fails with ErrNodeBusy.
	NodeWait time.Duration

	// pickPorts picks the cluster's ports (freePorts when nil): a test's
	// way to hand a start a port that is taken.
	pickPorts func(n int) ([]int, error)
}

// Start starts a control plane with nodes kwok nodes (and the real node
// with opts.Node) and returns once the nodes are Ready and the
// controllers run. On error nothing is left.
func Start(ctx context.Context, nodes int, opts Options) (*Cluster, error) {
	var err error
	for range startAttempts {
		var c *Cluster
		c, err = startOnce(ctx, nodes, opts)
		switch {
		case errors.Is(err, errFakeCrashed):
			// Said, not hidden: a test's output shows every crash.
			fmt.Fprintf(os.Stderr, "kubetest: starting again: %v\n", err)
		case !errors.Is(err, errPortTaken):
			return c, err
		}
	}
	return nil, err
}

// errPortTaken marks a start that failed because a port picked for one of
// its servers was bound by another process before the server bound it.
// The servers take port numbers, not listeners, so the gap between the
// pick and their bind cannot be closed; the test packages start several
// clusters at once beside other deployments, and in CI one lost that
// race. Such a start is tried again with other ports.
var errPortTaken = errors.New("a port it was given was taken")

// errFakeCrashed marks a start that failed because kwok, the fake of the
// nodes and no part of what the tests test, crashed as it started: once
// in a make test (kwok v0.8.0, a Go crash in building its metrics' CEL
// environment, 2026-11-29). Its next start is a new process, so Start
// tries again, and says so.
var errFakeCrashed = errors.New("kwok crashed as it started")

// startAttempts bounds the starts Start tries when a port was taken or
// kwok crashed.
const startAttempts = 3

// exitErr is the error of process p, which has exited, with its log's
// last lines.
func (p *process) exitErr() error {
	b, _ := os.ReadFile(p.log)
	return exitErrOf(p.name, p.c.Err(), string(b))
}

func exitErrOf(name string, exit error, log string) error {
	t := tailOf(log)
	err := fmt.Errorf("kubetest: %s exited (%v):\n%s", name, exit, t)
	switch {
	case strings.Contains(t, "address already in use"):
		return fmt.Errorf("%w (%w)", err, errPortTaken)
	case name == "kwok" && goCrash(log):
		return fmt.Errorf("%w (%w)", err, errFakeCrashed)
	}
	return err
}

// goCrash tells whether a Go program's log ends in its crash: a panic or
// a fatal error, followed by its stack.
func goCrash(log string) bool {
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return true
		}
	}
	return false
}

func startOnce(ctx context.Context, nodes int, opts Options) (_ *Cluster, err error) {
	tools, err := ToolsDir()
	if err != nil {
		return nil, err
	}
	if opts.Node {
		if err := nodeReady(tools); err != nil {
			return nil, err
		}
	}
	dir, err := tempdir.MkdirTemp("kubetest-")
	if err != nil {
		return nil, err
	}
	// c is not the named result: every error return sets that to nil,
	// and the cleanup needs the cluster started so far.
	c := &Cluster{Dir: dir}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	var images *pendingImages
	if opts.Node {
		// The node's images build while the control plane starts; on an
		// error their build ends before Stop removes Dir.
		ictx, cancel := context.WithCancel(ctx)
		images = c.prepareImages(ictx, opts.SandboxImageOnly)
		defer func() {
			cancel()
			images.wait()
		}()
	}
	// etcd's client and peer ports, the API server's, kwok's (its nodes'
	// kubelet port) and metrics-server's; the real node's kubelet, and
	// kube-proxy's health and metrics.
	pick := opts.pickPorts
	if pick == nil {
		pick = freePorts
	}
	ports, err := pick(8)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	c.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	f, err := c.writeFiles()
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := c.start(tools, "etcd",
		"--name=kubetest",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--unsafe-no-fsync", // a test's data need not survive a power cut
		"--log-level=warn"); err != nil {
		return nil, err
	}
	if err := c.waitHTTP(ctx, "etcd", etcdURL+"/health", http.DefaultClient); err != nil {
		return nil, err
	}
	if err := c.start(tools, "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "apiserver"),
		"--tls-cert-file="+f.serverCert, "--tls-private-key-file="+f.serverKey,
		"--client-ca-file="+f.ca,
		"--service-account-key-file="+f.saPub,
		"--service-account-signing-key-file="+f.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		// The endpoints of the "kubernetes" Service may not be loopback.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--allow-privileged=true",
		// The aggregation layer's client certificate, for metrics-server.
		"--proxy-client-cert-file="+f.adminCert, "--proxy-client-key-file="+f.adminKey,
		// The real node's kubelet (pods' logs) takes the same certificate.
		"--kubelet-client-certificate="+f.adminCert, "--kubelet-client-key="+f.adminKey,
		"--kubelet-preferred-address-types=InternalIP",
		"--profiling=false"); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, fmt.Errorf("kubetest: read %s: %w", c.Kubeconfig, err)
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, fmt.Errorf("kubetest: client: %w", err)
	}
	hc, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return nil, fmt.Errorf("kubetest: client: %w", err)
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", c.Server+"/readyz", hc); err != nil {
		return nil, err
	}
	common := []string{"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false", "--secure-port=0"}
	if err := c.start(tools, "kube-controller-manager", append(common,
		"--root-ca-file="+f.ca,
		"--service-account-private-key-file="+f.saKey,
		"--controllers=*",
		// The HPA's own period: 15 s by default, too slow for a test.
		"--horizontal-pod-autoscaler-sync-period=2s",
		// kwok renews the fake nodes' status; on a loaded 2-core machine a
		// renewal can miss the 50 s default, and the node lifecycle
		// controller then marks the node NotReady and evicts a test's pods
		// (seen in CI). Node health is not what these tests are about.
		"--node-monitor-grace-period=10m")...); err != nil {
		return nil, err
	}
	if err := c.start(tools, "kube-scheduler", common...); err != nil {
		return nil, err
	}
	if opts.Node {
		if err := c.startNode(ctx, tools, f, ports[5:8], images, opts); err != nil {
			return nil, err
		}
	}
	if nodes == 0 {
		return c, c.afterNodes(ctx, opts, ports[4])
	}
	if err := c.start(tools, "kwok",
		"--kubeconfig="+c.Kubeconfig,
		"--config="+f.stages,
		"--config="+f.metrics,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		"--node-ip=127.0.0.1",
		// Every node's kubelet endpoint (metrics-server scrapes it) is
		// kwok's server, with the API server's certificate for loopback.
		"--server-address=127.0.0.1:"+strconv.Itoa(ports[3]),
		"--node-port="+strconv.Itoa(ports[3]),
		"--tls-cert-file="+f.serverCert, "--tls-private-key-file="+f.serverKey); err != nil {
		return nil, err
	}
	for i := range nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		if err := c.addNode(ctx, name, i); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, name)
	}
	return c, c.afterNodes(ctx, opts, ports[4])
}

// afterNodes waits for the kwok nodes and the controllers, then starts
// metrics-server on port unless opts says not to.
func (c *Cluster) afterNodes(ctx context.Context, opts Options, port int) error {
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	if opts.NoMetrics {
		c.NoMetrics = "no metrics API: started with kubetest.Options.NoMetrics"
		return nil
	}
	return c.startMetrics(ctx, port)
}

// files are the paths writeFiles made.
type files struct {
	ca, serverCert, serverKey, adminCert, adminKey, saKey, saPub, stages, metrics string
}

// writeFiles makes the CA, the API server's certificate, a client
// certificate per kubeconfig user and the service-account key.
func (c *Cluster) writeFiles() (files, error) {
	var f files
	ca, err := newCertAuthority()
	if err != nil {
		return f, err
	}
	server, err := ca.issue("kube-apiserver", nil, true)
	if err != nil {
		return f, err
	}
	admin, err := ca.issue("kubetest-admin", []string{"system:masters"}, false)
	if err != nil {
		return f, err
	}
	norbac, err := ca.issue(NoRBACUser, nil, false)
	if err != nil {
		return f, err
	}
	sa, saPub, err := serviceAccountKey()
	if err != nil {
		return f, err
	}
	for _, w := range []struct {
		name string
		b    []byte
		p    *string
	}{
		{"ca.crt", ca.certPEM(), &f.ca},
		{"apiserver.crt", server.CertPEM, &f.serverCert},
		{"apiserver.key", server.KeyPEM, &f.serverKey},
		{"sa.key", sa, &f.saKey},
		{"sa.pub", saPub, &f.saPub},
		{"admin.crt", admin.CertPEM, &f.adminCert},
		{"admin.key", admin.KeyPEM, &f.adminKey},
		{"kwok-stages.yaml", stages, &f.stages},
		{"kwok-metrics.yaml", metricsConfig, &f.metrics},
	} {
		if *w.p, err = writePrivate(c.Dir, w.name, w.b); err != nil {
			return f, err
		}
	}
	return f, c.writeKubeconfig(ca.certPEM(), admin, norbac)
}

func (c *Cluster) writeKubeconfig(caPEM []byte, admin, norbac keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: admin.CertPEM, ClientKeyData: admin.KeyPEM}
	cfg.AuthInfos["norbac"] = &clientcmdapi.AuthInfo{ClientCertificateData: norbac.CertPEM, ClientKeyData: norbac.KeyPEM}
	cfg.Contexts[AdminContext] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "admin"}
	cfg.Contexts[NoRBACContext] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "norbac"}
	cfg.CurrentContext = AdminContext
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.Kubeconfig); err != nil {
		return fmt.Errorf("kubetest: write kubeconfig: %w", err)
	}
	return nil
}

// start starts tools/name with args, its output in Dir/name.log.
func (c *Cluster) start(tools, name string, args ...string) error {
	logPath := filepath.Join(c.Dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("kubetest: %s log: %w", name, err)
	}
	defer out.Close()
	cmd := exec.Command(filepath.Join(tools, name), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = c.Dir
	// kwok also reads ~/.kwok/kwok.yaml when it exists: a home of the
	// harness's own keeps a user's kwok config (stages) out of the tests.
	cmd.Env = append(os.Environ(), "HOME="+c.Dir)
	ch, err := child.Start(cmd)
	if err != nil {
		return fmt.Errorf("kubetest: start %s: %w", name, err)
	}
	c.procs = append(c.procs, &process{name: name, log: logPath, c: ch})
	return nil
}

// startTimeout bounds each wait of Start; the API server's first start
// (its storage and bootstrap policy) takes the longest: 20 s on an idle
// 2-core machine, and more than 2 minutes at a load average of 40.
const startTimeout = 4 * time.Minute

// waitHTTP polls url until it answers 200, the process dies or the time
// is up.
func (c *Cluster) waitHTTP(ctx context.Context, name, url string, hc *http.Client) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	p := c.procs[len(c.procs)-1]
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			b := make([]byte, 512)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(b[:n]))
		} else {
			last = err.Error()
		}
		select {
		case <-p.c.Done():
			return p.exitErr()
		case <-ctx.Done():
			return fmt.Errorf("kubetest: %s not ready at %s within %s (last: %s):\n%s", name, url, startTimeout, last, tail(p.log))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// addNode registers a node kwok keeps Ready, with room for many pods.
func (c *Cluster) addNode(ctx context.Context, name string, i int) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				FakeNodeAnnotation:    "fake",
				metricsPathAnnotation: fmt.Sprintf(metricsPathFormat, name),
			},
			Labels: map[string]string{
				"kubernetes.io/hostname":   name,
				"kubernetes.io/os":         "linux",
				"type":                     "kwok",
				"svclab.dev/kubetest-node": strconv.Itoa(i),
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubetest: create node %s: %w", name, err)
	}
	return nil
}

// waitReady waits for every node to be Ready (kwok runs) and for the
// default namespace's service account (the controller manager runs).
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var last string
	for {
		last = c.notReady(ctx)
		if last == "" {
			return nil
		}
		if err := c.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubetest: cluster not ready within %s: %s", startTimeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// notReady says what is not ready yet, or "".
func (c *Cluster) notReady(ctx context.Context) string {
	for _, name := range c.Nodes {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		ready := false
		for _, cond := range n.Status.Conditions {
			ready = ready || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
		}
		if !ready {
			return "node " + name + " not Ready (kwok)"
		}
	}
	if _, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return "service account default/default: " + err.Error() + " (kube-controller-manager)"
	}
	return ""
}

// stopGrace is how long a process of the cluster has to stop on SIGTERM
// before it is killed. The servers shut down gracefully, which at make
// test's nice 19 beside the timed tests once took metrics-server over 5 s.
const stopGrace = 15 * time.Second

// statelessGrace is a stateless process's grace before its kill.
const statelessGrace = 2 * time.Second

// Stop ends every process (SIGTERM, then the group's SIGKILL) and removes
// Dir. Safe to call more than once.
func (c *Cluster) Stop() error {
	var errs []error
	if err := c.stopNode(); err != nil {
		errs = append(errs, fmt.Errorf("real node: %w", err))
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		grace := stopGrace
		if p.stateless {
			grace = statelessGrace
		}
		if err := p.c.Stop(context.Background(), syscall.SIGTERM, grace); err != nil && !p.stateless {
			errs = append(errs, fmt.Errorf("%s: %w; its log ends:\n%s", p.name, err, tail(p.log)))
		}
	}
	c.procs = nil
	if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
		c.Dir = ""
	}
	return errors.Join(errs...)
}

// exited is an error naming the first of the cluster's processes that has
// exited, with its log's last lines; nil while every one runs.
func (c *Cluster) exited() error {
	for _, p := range c.procs {
		select {
		case <-p.c.Done():
			return p.exitErr()
		default:
		}
	}
	return nil
}

// PIDs lists the processes' ids, for tests that check nothing is left.
func (c *Cluster) PIDs() []int {
	var out []int
	for _, p := range c.procs {
		out = append(out, p.c.Process.Pid)
	}
	return out
}

// Log returns the last lines of one process's log (for a failing test).
func (c *Cluster) Log(name string) string {
	for _, p := range c.procs {
		if p.name == name {
			return tail(p.log)
		}
	}
	return ""
}

// tail returns the last lines of a log file. A Go program's crash
// prints its cause first and its stack after, which the last lines may
// not reach: the cause ("panic: ..." or "fatal error: ...") and the
// lines that follow it, up to the crashing frame, come first then.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	return tailOf(string(b))
}

const (
	tailLines  = 20 // the log's last lines
	causeLines = 8  // a crash's cause and the frames after it
)

func tailOf(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) <= tailLines {
		return strings.Join(lines, "\n")
	}
	last := lines[len(lines)-tailLines:]
	for i, l := range lines[:len(lines)-tailLines] {
		if goCrash(l) {
			cause := lines[i:min(i+causeLines, len(lines)-tailLines)]
			return strings.Join(cause, "\n") + "\n...\n" + strings.Join(last, "\n")
		}
	}
	return strings.Join(last, "\n")
}

// freePorts returns n loopback ports free now, from below the kernel's
// ephemeral range (package ports), so no connection of this machine's
// many is handed one of them before its server binds it.
func freePorts(n int) ([]int, error) {
	addrs, err := ports.Free(n)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(addrs))
	for i, a := range addrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return nil, err
		}
		out[i] = int(ap.Port())
	}
	return out, nil
}

// ClientFor returns a client of the kubeconfig's context name.
func (c *Cluster) ClientFor(t testing.TB, name string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: name}).ClientConfig()
	if err != nil {
		t.Fatalf("kubetest: context %s: %v", name, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubetest: client of context %s: %v", name, err)
	}
	return cs
}
