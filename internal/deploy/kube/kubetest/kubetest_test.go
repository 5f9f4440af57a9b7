package kubetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/image"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// createPod creates a pod of image on node 1 in a fresh namespace and
// returns a function that reads it back, and the namespace's name.
func createPod(ctx context.Context, t *testing.T, c *Cluster, image string) (get func() *corev1.Pod, ns string) {
	t.Helper()
	n, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubetest-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Client.CoreV1().Namespaces().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{
			Containers:   []corev1.Container{{Name: "c", Image: image}},
			NodeSelector: map[string]string{"svclab.dev/kubetest-node": "1"},
		},
	}
	// The namespace's default service account comes from the controller
	// manager a moment after the namespace; admission refuses pods until then.
	for {
		_, err = c.Client.CoreV1().Pods(n.Name).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	return func() *corev1.Pod {
		t.Helper()
		p, err := c.Client.CoreV1().Pods(n.Name).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s/p: %v", n.Name, err)
		}
		return p
	}, n.Name
}

// TestPodRunsOnFakeNode: the scheduler places a pod on a kwok node and kwok
// marks it Running, which is all the kube deployer's tests rely on.
func TestPodRunsOnFakeNode(t *testing.T) {
	c := Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	get, _ := createPod(ctx, t, c, "example.invalid/none:1")
	for {
		p := get()
		if p.Status.Phase == corev1.PodRunning {
			if p.Spec.NodeName != c.Nodes[1] {
				t.Fatalf("pod on %q, want %q (its node selector)", p.Spec.NodeName, c.Nodes[1])
			}
			if !podReady(p) {
				t.Fatalf("pod Running but not Ready: %+v", p.Status)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pod not Running on %s: %+v", c.Nodes[1], p.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestFaultImages: kwok's stages (stages.yaml) give a pod of each fault
// image the status a kubelet would, and the Warning event, and keep it
// there: the pod is still not Ready seconds later.
func TestFaultImages(t *testing.T) {
	c := Get(t)
	for _, tc := range []struct {
		image, phase, waiting, event string
	}{
		{UnpullableImage, "Pending", "ImagePullBackOff", "Failed"},
		{NeverReadyImage, "Running", "", "Unhealthy"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			get, ns := createPod(ctx, t, c, tc.image)
			var p *corev1.Pod
			for p = get(); p.Status.PodIP == ""; p = get() {
				if ctx.Err() != nil {
					t.Fatalf("kwok gave the pod no status: %+v", p.Status)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if string(p.Status.Phase) != tc.phase {
				t.Errorf("phase %s, want %s", p.Status.Phase, tc.phase)
			}
			if len(p.Status.ContainerStatuses) != 1 {
				t.Fatalf("container statuses %+v, want one", p.Status.ContainerStatuses)
			}
			cs := p.Status.ContainerStatuses[0]
			switch {
			case tc.waiting != "" && (cs.State.Waiting == nil || cs.State.Waiting.Reason != tc.waiting || !strings.Contains(cs.State.Waiting.Message, tc.image)):
				t.Errorf("container state %+v, want waiting %s naming %s", cs.State, tc.waiting, tc.image)
			case tc.waiting == "" && cs.State.Running == nil:
				t.Errorf("container state %+v, want running", cs.State)
			}
			// A later stage must not make it Ready: a kubelet would not.
			time.Sleep(2 * time.Second)
			if p = get(); podReady(p) || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Ready {
				t.Errorf("pod of %s became Ready: %+v", tc.image, p.Status)
			}
			for {
				evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning,reason=" + tc.event})
				if err == nil && len(evs.Items) > 0 {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("no Warning event %s: %v", tc.event, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// TestNoRBACForbidden: the kubeconfig's second user is refused.
func TestNoRBACForbidden(t *testing.T) {
	c := Get(t)
	cs := c.ClientFor(t, NoRBACContext)
	_, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err == nil {
		t.Fatal("listing namespaces as the user without RBAC worked")
	}
	if want := "forbidden"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// TestStopLeavesNothing: a second cluster's processes and files are gone
// after Stop. Its first start is given an API server port another
// listener holds: Start tries again with other ports, and the first
// try's etcd is gone.
func TestStopLeavesNothing(t *testing.T) {
	Get(t)
	t.Parallel() // beside TestMetricsAPI's wait
	held, err := ports.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	var picks [][]int
	pick := func(n int) ([]int, error) {
		p, err := freePorts(n)
		if err == nil && len(picks) == 0 {
			p[2] = heldPort
		}
		picks = append(picks, p)
		return p, err
	}
	c, err := Start(context.Background(), 1, Options{pickPorts: pick})
	if err != nil {
		t.Fatal(err)
	}
	if len(picks) != 2 {
		t.Errorf("Start picked ports %d times, want 2 (the first try's API server port was taken)", len(picks))
	}
	if strings.HasSuffix(c.Server, ":"+strconv.Itoa(heldPort)) {
		t.Errorf("the API server is at %s, the port held by the test", c.Server)
	}
	if len(picks) > 0 {
		first := "--listen-client-urls=http://127.0.0.1:" + strconv.Itoa(picks[0][0])
		if pid := processWith(t, first); pid != 0 {
			t.Errorf("the first try's etcd (pid %d, %s) still runs", pid, first)
		}
	}
	pids, dir := c.PIDs(), c.Dir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still runs after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Stop (%v)", dir, err)
	}
}

// processWith returns a process whose command line has arg, or 0.
func processWith(t *testing.T, arg string) int {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited since the glob
		}
		if slices.Contains(strings.Split(string(b), "\x00"), arg) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return pid
		}
	}
	return 0
}

// TestKubeletResourceMetrics: kwok serves each node's kubelet
// /metrics/resource (metrics.yaml) on the node's kubelet port, with the
// usage it emulates for a pod, as metrics-server reads it. (Not through the
// API server's node proxy: it refuses a node on loopback.)
func TestKubeletResourceMetrics(t *testing.T) {
	c := Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	get, ns := createPod(ctx, t, c, "example.invalid/none:1")
	for p := get(); p.Status.PodIP == ""; p = get() {
		if ctx.Err() != nil {
			t.Fatal("pod never Running")
		}
		time.Sleep(100 * time.Millisecond)
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, c.Nodes[1], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", node.Status.DaemonEndpoints.KubeletEndpoint.Port, node.Annotations[metricsPathAnnotation])
	hc, err := rest.HTTPClientFor(c.Config) // trusts the harness CA
	if err != nil {
		t.Fatal(err)
	}
	// A sample line: `name{container="c",namespace="ns",pod="p"} value`.
	value := func(body []byte, name string) (float64, bool) {
		re := regexp.MustCompile(`(?m)^` + name + `\{container="c",namespace="` + regexp.QuoteMeta(ns) + `",pod="p"\} (\S+)$`)
		m := re.FindSubmatch(body)
		if m == nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		return v, err == nil
	}
	fetch := func() []byte {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	var body []byte
	for {
		body = fetch()
		if cpu, ok := value(body, "container_cpu_usage_seconds_total"); ok && cpu > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("GET %s: no CPU of pod %s/p in:\n%s", url, ns, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t0 := time.Now()
	if mem, _ := value(body, "container_memory_working_set_bytes"); mem != float64(PodMemory.Value()) {
		t.Errorf("memory %g bytes, want %d (PodMemory)", mem, PodMemory.Value())
	}
	if start, ok := value(body, "container_start_time_seconds"); !ok {
		t.Errorf("no start time of pod %s/p in:\n%s", ns, body)
	} else if age := float64(time.Now().UnixNano())/1e9 - start; age < 0 || age > 60 {
		t.Errorf("start time %f is %f s ago, want the pod's creation (unix seconds)", start, age)
	}
	// The CPU counter grows at PodCPU cores.
	cpu0, _ := value(body, "container_cpu_usage_seconds_total")
	time.Sleep(2 * time.Second)
	body = fetch()
	cpu1, _ := value(body, "container_cpu_usage_seconds_total")
	if rate, want := (cpu1-cpu0)/time.Since(t0).Seconds(), PodCPU.AsApproximateFloat64(); rate < want*0.5 || rate > want*1.5 {
		t.Errorf("CPU counter %f then %f: %f cores, want about %f (PodCPU)", cpu0, cpu1, rate, want)
	}
	for _, want := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in:\n%s", want, body)
		}
	}
}

// TestMetricsAPI: with metrics-server built, the cluster serves the
// resource metrics API from kwok's emulated kubelets, and the HPA computes
// utilization from it: a Deployment's pod uses what kwok reports (PodCPU,
// PodMemory), which is half its 200m CPU request. It runs beside
// TestStopLeavesNothing: most of it is waiting for metrics-server's
// scrapes, 10 s apart.
func TestMetricsAPI(t *testing.T) {
	c := Get(t)
	c.RequireMetrics(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubetest-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := n.Name
	defer c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	labels := map[string]string{"app": "m"}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "c", Image: "example.invalid/none:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
				}}},
			},
		},
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	target := int32(80)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "m"},
			MinReplicas:    &one, MaxReplicas: 3,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
			}}},
		},
	}
	if _, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}
	start := time.Now()
	checked := false
	for {
		if !checked {
			list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			var cs []any
			if err == nil && len(list.Items) == 1 {
				// Listed with no containers until two scrapes give a rate.
				cs, _, _ = unstructured.NestedSlice(list.Items[0].Object, "containers")
			}
			if len(cs) > 1 {
				t.Fatalf("pod metrics %v, want one container", list.Items[0].Object)
			}
			if len(cs) == 1 {
				checked = true
				usage, _, _ := unstructured.NestedStringMap(cs[0].(map[string]any), "usage")
				cpu, err1 := resource.ParseQuantity(usage["cpu"])
				mem, err2 := resource.ParseQuantity(usage["memory"])
				if err1 != nil || err2 != nil {
					t.Fatalf("usage %v: %v %v", usage, err1, err2)
				}
				t.Logf("metrics of a new pod after %s: cpu %s memory %s", time.Since(start).Round(time.Millisecond), cpu.String(), mem.String())
				if d := cpu.MilliValue() - PodCPU.MilliValue(); d < -20 || d > 20 {
					t.Errorf("cpu %s, want about %s (PodCPU)", cpu.String(), PodCPU.String())
				}
				if mem.Value() != PodMemory.Value() {
					t.Errorf("memory %s, want %s (PodMemory)", mem.String(), PodMemory.String())
				}
			}
		}
		h, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "m", metav1.GetOptions{})
		if err == nil && len(h.Status.CurrentMetrics) == 1 && h.Status.CurrentMetrics[0].Resource != nil {
			u := h.Status.CurrentMetrics[0].Resource.Current.AverageUtilization
			if checked && u != nil {
				t.Logf("HPA utilization after %s: %d%%", time.Since(start).Round(time.Millisecond), *u)
				if *u < 45 || *u > 55 {
					t.Errorf("HPA utilization %d%%, want 50%% (100m of 200m)", *u)
				}
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("metrics API or HPA without metrics (pod metrics read: %v; HPA: %+v)\n%s", checked, h, c.Log("metrics-server"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestWithParents: a layer's directories come before what they hold,
// those no file names are added as root's, and one a file names keeps
// its owner and mode.
func TestWithParents(t *testing.T) {
	got := withParents([]image.File{
		{Path: "/var/lib/postgresql/data", Mode: 0o700, UID: 999},
		{Path: "/usr/lib/x/lib.so", Src: "/x", Mode: 0o755},
		{Path: "/var/lib/postgresql", Mode: 0o755, UID: 999},
	})
	var paths []string
	for _, f := range got {
		paths = append(paths, fmt.Sprintf("%s %o %d", f.Path, f.Mode, f.UID))
	}
	want := []string{"/usr 755 0", "/usr/lib 755 0", "/usr/lib/x 755 0", "/usr/lib/x/lib.so 755 0",
		"/var 755 0", "/var/lib 755 0", "/var/lib/postgresql 755 999", "/var/lib/postgresql/data 700 999"}
	if !slices.Equal(paths, want) {
		t.Errorf("got\n%q\nwant\n%q", paths, want)
	}
}

// TestSharedLibraries: ldd's answer for a dynamic program of this
// machine names its C library and the dynamic loader, by path.
func TestSharedLibraries(t *testing.T) {
	libs, err := sharedLibraries(context.Background(), []string{"/bin/sh"})
	if err != nil {
		t.Fatal(err)
	}
	var libc, loader bool
	for _, l := range libs {
		if !filepath.IsAbs(l) {
			t.Errorf("library %q is not a path", l)
		}
		libc = libc || strings.HasPrefix(filepath.Base(l), "libc.so")
		loader = loader || strings.HasPrefix(filepath.Base(l), "ld-linux")
	}
	if !libc || !loader {
		t.Errorf("libraries of /bin/sh %v: want the C library and the loader", libs)
	}
}
