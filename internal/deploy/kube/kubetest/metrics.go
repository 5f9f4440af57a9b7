package kubetest

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The usage kwok reports for every container (metrics.yaml), which the
// metrics API then serves.
var (
	PodCPU    = resource.MustParse("100m")
	PodMemory = resource.MustParse("48Mi")
)

// metricsPath is where kwok serves a node's kubelet /metrics/resource
// (metrics.yaml's Metric); a node's annotation tells metrics-server.
const (
	metricsPathAnnotation = "metrics.k8s.io/resource-metrics-path"
	metricsPathFormat     = "/metrics/nodes/%s/metrics/resource"
)

// metricsConfig is kwok's Metric and ClusterResourceUsage for the harness.
//
//go:embed metrics.yaml
var metricsConfig []byte

// MetricsServerPath is the metrics-server binary `make kube-tools` builds
// beside the control plane (toolsPath).
func MetricsServerPath() string { return filepath.Join(toolsPath(), "metrics-server") }

// metricsResolution is metrics-server's scrape period: its minimum.
const metricsResolution = 10 * time.Second

// startMetrics runs metrics-server on loopback port, scraping kwok's
// nodes, and registers it as the metrics.k8s.io API the way a cluster's
// install does: an APIService whose Service is an ExternalName of
// loopback, which the API server's aggregation layer proxies to (its
// --proxy-client-* certificate is the administrator's, as kwokctl's).
// Without the binary the cluster serves no metrics API and Cluster.NoMetrics
// says why; it is optional, as the HPA and the deployer work without it.
func (c *Cluster) startMetrics(ctx context.Context, port int) error {
	bin := MetricsServerPath()
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		c.NoMetrics = fmt.Sprintf("no metrics API: metrics-server missing at %s; `make kube-tools` builds it", bin)
		return nil
	}
	if err := c.start(filepath.Dir(bin), filepath.Base(bin),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.Dir, "metrics-server"),
		"--kubeconfig="+c.Kubeconfig,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		// kwok's serving certificate is the harness CA's; metrics-server
		// has no flag for a kubelet CA file.
		"--kubelet-insecure-tls",
		"--kubelet-use-node-status-port",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-request-timeout=5s",
		"--metric-resolution="+metricsResolution.String()); err != nil {
		return err
	}
	// Its graceful stop once outlasted stopGrace beside the real node's
	// tests (make test); it keeps nothing a kill could lose.
	c.procs[len(c.procs)-1].stateless = true
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-server", Namespace: "kube-system"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := c.Client.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: metrics-server Service: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("kubetest: client: %w", err)
	}
	apisvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			// metrics-server's certificate is one it makes itself.
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": "kube-system", "name": "metrics-server", "port": int64(port)},
		},
	}}
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	if _, err := dyn.Resource(gvr).Create(ctx, apisvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: metrics APIService: %w", err)
	}
	return c.waitMetricsAPI(ctx, dyn, gvr)
}

// waitMetricsAPI waits until the API server finds metrics-server available
// (its APIService condition), which it checks by calling it.
func (c *Cluster) waitMetricsAPI(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	p := c.procs[len(c.procs)-1]
	last := "no status"
	for {
		u, err := dyn.Resource(gvr).Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				if m["type"] == "Available" {
					if m["status"] == "True" {
						return nil
					}
					last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				}
			}
		}
		select {
		case <-p.c.Done():
			return p.exitErr()
		case <-ctx.Done():
			return fmt.Errorf("kubetest: the metrics API not available within %s (%s):\n%s", startTimeout, last, tail(p.log))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RequireMetrics skips t when the cluster serves no metrics API, saying
// how to build metrics-server.
func (c *Cluster) RequireMetrics(t testing.TB) {
	t.Helper()
	if c.NoMetrics != "" {
		t.Skip(c.NoMetrics)
	}
}
