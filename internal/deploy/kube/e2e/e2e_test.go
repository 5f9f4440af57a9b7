package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"

	_ "github.com/svclab/svclab/apps/all"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// baseSpec is a design point of the chain app split over three groups,
// hop3 autoscaled, with a short load, for the kube deployer.
const baseSpec = `
[app]
name = "chain"
hops = 3

[deploy]
deployer = "kube"
transport = "grpc"
placement = "split"
start_timeout = "%s"

[deploy.kube]
image = "registry.example/svclab:test"
generators = 2
%s

[deploy.replicas]
hop2 = 2

[deploy.autoscale.hop3]
min = 1
max = 3
cpu_target = 60

[load]
mode = "open"
rate = 20
warmup = "0s"
duration = "1s"
`

// design resolves a spec of baseSpec, with the kubeconfig of c as the one
// the deployer reads.
func design(t *testing.T, c *kubetest.Cluster, timeout string, extra string) *runtime.Topology {
	t.Helper()
	// The shared cluster's kubeconfig is the process's (kubetest.Main):
	// parallel tests cannot Setenv. Another cluster's is set here.
	if os.Getenv("KUBECONFIG") != c.Kubeconfig {
		t.Setenv("KUBECONFIG", c.Kubeconfig)
	}
	src := fmt.Sprintf(baseSpec, timeout, extra)
	s, err := spec.Parse(filepath.Join(t.TempDir(), "kube.toml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, topo, err := deploy.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func namespaceGone(t *testing.T, c *kubetest.Cluster, ns string) {
	t.Helper()
	_, err := c.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s still there after the run (%v)", ns, err)
	}
}

// TestDeployRolloutStop: a design point is applied, rolls out on the kwok
// nodes, its HPA and load Job are accepted by the API server, and Stop
// deletes its namespace.
func TestDeployRolloutStop(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	topo := design(t, c, "60s", "")
	ctx := context.Background()
	d, err := deploy.Lookup(kube.Name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy: %v\n%s", err, c.Log("kube-controller-manager"))
	}
	// docs/KUBERNETES.md quotes this: apply to every Deployment available.
	t.Logf("apply→ready: %s (3 Deployments, 4 pods, on %d kwok nodes)", time.Since(start).Round(time.Millisecond), len(c.Nodes))
	kd := dep.(*kube.Deployment)
	ns := kd.Namespace()
	defer dep.Stop(ctx)

	deps, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 3 {
		t.Fatalf("%d Deployments, want one per group (3)", len(deps.Items))
	}
	for _, dd := range deps.Items {
		if dd.Status.AvailableReplicas != *dd.Spec.Replicas {
			t.Errorf("deployment %s: %d of %d available after Deploy", dd.Name, dd.Status.AvailableReplicas, *dd.Spec.Replicas)
		}
		for _, mf := range dd.ManagedFields {
			if mf.Operation == metav1.ManagedFieldsOperationApply && mf.Manager != kube.FieldManager {
				t.Errorf("deployment %s applied by %q, want %q", dd.Name, mf.Manager, kube.FieldManager)
			}
		}
	}
	// run.json's warning says the pods have no resource samples, and
	// why: whether the cluster serves the metrics API (metrics-server in
	// the harness when built).
	why := "the cluster serves no metrics API (metrics.k8s.io"
	if c.NoMetrics == "" {
		why = "the cluster serves the metrics API (metrics.k8s.io)"
	}
	if note := kd.ResourceNote(); !strings.HasPrefix(note, kube.ResourceNotePrefix+"no CPU or memory samples of the pods") ||
		!strings.Contains(note, why) {
		t.Errorf("resource note %q does not say %q", note, why)
	}
	hpa, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(hpa.Items) != 1 || hpa.Items[0].Spec.MaxReplicas != 3 {
		t.Fatalf("HPA: %v %+v", err, hpa)
	}
	// The load Job: under kwok its pods are scheduled and marked done but
	// run nothing, so their logs hold no results and RunLoad says so; the
	// data path is tested on files (package kube) and on the local
	// deployer's generators.
	_, lerr := kd.RunLoad(ctx, load.Config{}, load.Options{})
	job, err := c.Client.BatchV1().Jobs(ns).Get(ctx, kube.LoadJob, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("load Job not accepted: %v (RunLoad: %v)", err, lerr)
	}
	if *job.Spec.Completions != 2 || *job.Spec.Parallelism != 2 {
		t.Errorf("load Job completions %d parallelism %d, want deploy.kube.generators (2)", *job.Spec.Completions, *job.Spec.Parallelism)
	}
	if lerr == nil {
		t.Fatal("RunLoad under kwok returned results; its pods run nothing")
	}
	t.Logf("RunLoad under kwok: %v", lerr)

	start = time.Now()
	if err := dep.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("namespace deleted and gone: %s", time.Since(start).Round(time.Millisecond))
	namespaceGone(t, c, ns)
}

// TestNodeSelectorMatchingNothing: the run fails within start_timeout with
// the scheduler's reason, and its namespace is gone.
func TestNodeSelectorMatchingNothing(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	// A namespace of its own: the other tests' come and go beside it.
	const ns = "node-selector-nothing"
	topo := design(t, c, "8s", "namespace = \""+ns+"\"\nnode_selector = { \"svclab.dev/pool\" = \"none\" }")
	d, _ := deploy.Lookup(kube.Name)
	start := time.Now()
	_, err := d.Deploy(context.Background(), topo, deploy.Options{})
	took := time.Since(start)
	if err == nil {
		t.Fatal("deploy with a node selector matching no node worked")
	}
	for _, want := range []string{"8s", "Unschedulable", "node(s) didn't match Pod's node affinity/selector"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took > 40*time.Second {
		t.Errorf("failed after %s; start_timeout 8s", took)
	}
	namespaceGone(t, c, ns)
}

// TestNoRBAC: a user without the permissions fails with Forbidden, naming
// what it lacked.
func TestNoRBAC(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	topo := design(t, c, "10s", "context = \""+kubetest.NoRBACContext+"\"")
	d, _ := deploy.Lookup(kube.Name)
	_, err := d.Deploy(context.Background(), topo, deploy.Options{})
	if err == nil || !strings.Contains(err.Error(), "Forbidden") || !strings.Contains(err.Error(), "namespaces") {
		t.Fatalf("deploy without RBAC: %v, want Forbidden on namespaces", err)
	}
}

// TestBadKubeconfig: a missing context and an unreachable API server fail
// clearly.
func TestBadKubeconfig(t *testing.T) {
	c := kubetest.Get(t)
	topo := design(t, c, "5s", "context = \"nope\"")
	d, _ := deploy.Lookup(kube.Name)
	if _, err := d.Deploy(context.Background(), topo, deploy.Options{}); err == nil || !strings.Contains(err.Error(), `context "nope" does not exist`) {
		t.Errorf("missing context: %v", err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	if _, err := d.Deploy(context.Background(), topo, deploy.Options{}); err == nil || !strings.Contains(err.Error(), "no kubeconfig") {
		t.Errorf("no kubeconfig: %v", err)
	}
}

// istioCRDs registers the two Istio kinds svclab renders, as Istio's own
// install would (their schemas kept open: the API server checks the
// kind's existence and the object's shape, Istio checks its fields).
func istioCRDs(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, k := range []struct{ group, kind, plural string }{
		{"security.istio.io", "PeerAuthentication", "peerauthentications"},
		{"telemetry.istio.io", "Telemetry", "telemetries"},
	} {
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1",
			"kind":       "CustomResourceDefinition",
			"metadata":   map[string]any{"name": k.plural + "." + k.group},
			"spec": map[string]any{
				"group": k.group,
				"scope": "Namespaced",
				"names": map[string]any{"kind": k.kind, "plural": k.plural, "singular": strings.ToLower(k.kind), "listKind": k.kind + "List"},
				"versions": []any{map[string]any{
					"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{
						"type": "object",
						"properties": map[string]any{"spec": map[string]any{
							"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
					}},
				}},
			},
		}}
		_, err := dyn.Resource(gvr).Create(context.Background(), crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("CRD %s: %v", k.kind, err)
		}
	}
	// A CRD is served once Established; discovery then lists it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err1 := c.Client.Discovery().ServerResourcesForGroupVersion("security.istio.io/v1")
		_, err2 := c.Client.Discovery().ServerResourcesForGroupVersion("telemetry.istio.io/v1")
		if err1 == nil && err2 == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Istio CRDs not served: %v %v", err1, err2)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestIstioObjectsAccepted: with Istio's CRDs registered, a design point
// with deploy.sidecar = "istio" and deploy.mtls applies its
// PeerAuthentication and Telemetry.
func TestIstioObjectsAccepted(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	istioCRDs(t, c)
	topo := design(t, c, "60s", "")
	s, err := topo.Spec.With(map[string]any{"deploy.sidecar": "istio", "deploy.mtls": true, "deploy.tracing": 0.1})
	if err != nil {
		t.Fatal(err)
	}
	topo, err = runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := deploy.Lookup(kube.Name)
	ctx := context.Background()
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := dep.(*kube.Deployment).Namespace()
	defer dep.Stop(ctx)
	dyn, _ := dynamic.NewForConfig(c.Config)
	pa, err := dyn.Resource(schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "peerauthentications"}).Namespace(ns).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PeerAuthentication: %v", err)
	}
	if mode, _, _ := unstructured.NestedString(pa.Object, "spec", "mtls", "mode"); mode != "STRICT" {
		t.Errorf("PeerAuthentication mode %q, want STRICT", mode)
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "telemetry.istio.io", Version: "v1", Resource: "telemetries"}).Namespace(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("Telemetry: %v", err)
	}
	if err := dep.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	namespaceGone(t, c, ns)
}
