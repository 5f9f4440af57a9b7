package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/tempdir"
)

// FieldManager is the name svclab's server-side applies are recorded
// under (metadata.managedFields).
const FieldManager = "svclab"

// AnnotationOwner marks a namespace svclab made for a run with the svclab
// process that made it ("HOST PID START"), so that `svclab clean --kube`
// can tell a live run's namespace from one a killed run left.
const AnnotationOwner = "svclab.dev/owner"

// Deployer is the "kube" deployer: a design point's objects applied to a
// cluster (Render), the rollout awaited, the load run as a Job.
type Deployer struct{}

// Name is the value of deploy.deployer that selects this deployer.
const Name = "kube"

// Name implements deploy.Deployer.
func (Deployer) Name() string { return Name }

// Client is a cluster connection: the typed client, the dynamic one
// (for server-side apply of any kind, Istio's included) and where it
// points.
type Client struct {
	Config  *rest.Config
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
	// Context is the kubeconfig context used, Server its API server.
	Context, Server string
}

// requestTimeout bounds each API request, so an unreachable API server
// fails a run within deploy.start_timeout rather than hanging it.
const requestTimeout = 15 * time.Second

// Connect reads the kubeconfig as kubectl does ($KUBECONFIG, else
// ~/.kube/config) and connects with context kctx, the current context when
// empty. Errors say which kubeconfig and context were missing.
func Connect(kctx string) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kctx})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", strings.Join(rules.Precedence, ":"), err)
	}
	name := kctx
	if name == "" {
		name = raw.CurrentContext
	}
	switch {
	case len(raw.Contexts) == 0:
		return nil, fmt.Errorf("no kubeconfig with a context at %s (set KUBECONFIG or deploy.kube.context; see docs/KUBERNETES.md)", strings.Join(rules.Precedence, ":"))
	case name == "":
		return nil, fmt.Errorf("the kubeconfig has no current context: set deploy.kube.context to one of %s", contextNames(raw.Contexts))
	case raw.Contexts[name] == nil:
		return nil, fmt.Errorf("kubeconfig context %q does not exist; the kubeconfig has %s", name, contextNames(raw.Contexts))
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	cfg.Timeout = requestTimeout
	cfg.UserAgent = "svclab"
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	return &Client{Config: cfg, Typed: typed, Dynamic: dyn, Context: name, Server: cfg.Host}, nil
}

func contextNames[V any](m map[string]V) string {
	var names []string
	for n := range m {
		names = append(names, strconv.Quote(n))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// newRunID names a deployment: sortable by time, unique by its random
// tail, and a valid label value and namespace suffix.
func newRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return strconv.FormatInt(time.Now().Unix(), 36) + "-" + hex.EncodeToString(b)
}

// ownerValue is AnnotationOwner's value for this process.
func ownerValue() string {
	o := tempdir.Self()
	return fmt.Sprintf("%s %d %d", hostname(), o.PID, o.Start)
}

// Deploy implements deploy.Deployer: it connects, creates the namespace,
// applies every object but the load Job and waits for every Deployment's
// rollout, all within the topology's start timeout (or opts.ReadyTimeout).
// On failure it deletes what it made and returns the cluster's reason.
func (d Deployer) Deploy(ctx context.Context, topo *runtime.Topology, opts deploy.Options) (deploy.Deployment, error) {
	s := topo.Spec
	if s == nil {
		return nil, errors.New("kube: the topology has no spec to render")
	}
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = topo.StartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	keys, err := KeysOf(s)
	if err != nil {
		return nil, err
	}
	c, err := Connect(keys.Context)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	id := newRunID()
	objs, err := Render(s, topo, RenderOptions{RunID: id})
	if err != nil {
		return nil, err
	}
	dep := &Deployment{
		client: c, topo: topo, id: id, ns: Namespace(s, RenderOptions{RunID: id}),
		namedNamespace: keys.Namespace != "",
		log:            opts.Log, exited: make(chan deploy.Process),
	}
	for _, o := range objs {
		if isLoadJob(o) {
			dep.loadJob = o
			continue
		}
		dep.objects = append(dep.objects, o)
	}
	if err := dep.apply(ctx, timeout); err != nil {
		return nil, dep.failed(err)
	}
	if err := dep.waitRollout(ctx, timeout, nil); err != nil {
		return nil, dep.failed(err)
	}
	return dep, nil
}

// failed cleans up after a failed Deploy and returns err.
func (dep *Deployment) failed(err error) error {
	if !dep.touched {
		return fmt.Errorf("kube: %w", err) // nothing made, nothing to delete
	}
	sctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	if cerr := dep.Stop(sctx); cerr != nil {
		return fmt.Errorf("kube: %w (and the clean-up failed: %v)", err, cerr)
	}
	return fmt.Errorf("kube: %w", err)
}

// Deployment is a design point running on a cluster.
type Deployment struct {
	client  *Client
	topo    *runtime.Topology
	id, ns  string
	log     io.Writer
	objects []Object
	loadJob Object
	exited  chan deploy.Process
	// ownNamespace is set when Deploy created the namespace: Stop deletes
	// it; otherwise Stop deletes the objects it applied.
	ownNamespace bool
	// namedNamespace is set when the spec names the namespace
	// (deploy.kube.namespace), which may have been made beforehand.
	namedNamespace bool
	// restoreLabels are the labels Deploy changed on a namespace it did
	// not make, with their values before (nil: absent), for Stop.
	restoreLabels map[string]*string
	// touched is set once anything may have been made in the cluster.
	touched bool

	stopOnce sync.Once
	stopErr  error

	sampling podSampling // what StreamResources read (resources.go)
}

// ID implements deploy.Deployment.
func (dep *Deployment) ID() string { return dep.id }

// Namespace is where the deployment's objects are.
func (dep *Deployment) Namespace() string { return dep.ns }

// Topology implements deploy.Deployment.
func (dep *Deployment) Topology() *runtime.Topology { return dep.topo }

// Entry is the entry's Service inside the cluster; only pods reach it.
func (dep *Deployment) Entry() runtime.Endpoint {
	return runtime.Endpoint{Transport: dep.topo.Transport, Network: "tcp", Addr: dep.serviceHost(dep.topo.Entry) + ":" + strconv.Itoa(ComponentPort)}
}

// GatewayURL is the entry's gateway inside the cluster.
func (dep *Deployment) GatewayURL() string {
	return "http://" + dep.serviceHost(dep.topo.Entry) + ":" + strconv.Itoa(GatewayPort)
}

func (dep *Deployment) serviceHost(component string) string {
	n, _ := dnsName(component)
	return n + "." + dep.ns + ".svc"
}

// Dial fails: the entry is inside the cluster, and the load runs there
// (RunLoad).
func (dep *Deployment) Dial(context.Context, transport.DialOptions) (transport.Conn, error) {
	return nil, fmt.Errorf("kube: the entry %s is reachable only inside the cluster; `kubectl -n %s port-forward` to call it from here", dep.Entry().Addr, dep.ns)
}

// CurlExamples implements deploy.Deployment.
func (dep *Deployment) CurlExamples() []string {
	return []string{fmt.Sprintf("kubectl -n %s port-forward service/%s %d  # then call http://127.0.0.1:%d", dep.ns, strings.SplitN(dep.serviceHost(dep.topo.Entry), ".", 2)[0], GatewayPort, GatewayPort)}
}

// Processes has none: pods are not processes of this machine; their
// resources come from the metrics API (StreamResources), and ResourceNote
// says why when they do not.
func (dep *Deployment) Processes() []deploy.Process { return nil }

// Exited implements deploy.Deployment; pods that fail are the cluster's
// to restart, so nothing is sent.
func (dep *Deployment) Exited() <-chan deploy.Process { return dep.exited }

// deleteTimeout bounds Stop's wait for the namespace to go.
const deleteTimeout = 2 * time.Minute

// Stop deletes the run's namespace (or, in a namespace the user named,
// the objects applied) and waits until it is gone.
func (dep *Deployment) Stop(ctx context.Context) error {
	dep.stopOnce.Do(func() { dep.stopErr = dep.remove(ctx) })
	return dep.stopErr
}

func isLoadJob(o Object) bool {
	return o.GetObjectKind().GroupVersionKind().Kind == "Job" && o.GetName() == LoadJob
}

func (dep *Deployment) logf(format string, args ...any) {
	if dep.log != nil {
		fmt.Fprintf(dep.log, "[kube] "+format+"\n", args...)
	}
}
