package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
)

// resolve parses src, as file k.toml, as a kube spec and resolves it.
func resolve(t *testing.T, src string) (*spec.Spec, *runtime.Topology) {
	t.Helper()
	s, err := spec.Parse("k.toml", []byte(src), "deploy.deployer=kube")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, topo
}

// render parses src as a kube spec and renders it.
func render(t *testing.T, src string, opts RenderOptions) []Object {
	t.Helper()
	s, topo := resolve(t, src)
	objs, err := Render(s, topo, opts)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the objects of type T, by name.
func find[T Object](objs []Object) map[string]T {
	out := map[string]T{}
	for _, o := range objs {
		if v, ok := o.(T); ok {
			out[o.GetName()] = v
		}
	}
	return out
}

const chainSplit = `
[app]
name = "chain"
hops = 3
[deploy]
transport = "grpc"
placement = "split"
`

// withLoad gives src a [load] table, which renders the load Job.
const withLoad = "[load]\nrate = 50\n"

func TestRenderDeployments(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		replicas map[string]int32 // Deployment → replicas; -1 for unset (HPA)
		cpu, mem map[string]string
	}{
		{"defaults", chainSplit, map[string]int32{"hop1": 1, "hop2": 1, "hop3": 1}, nil, nil},
		{"replicas", chainSplit + "[deploy.replicas]\nhop2 = 3\n", map[string]int32{"hop1": 1, "hop2": 3, "hop3": 1}, nil, nil},
		{"resources", chainSplit + "[deploy.resources.hop3]\ncpu = 0.5\nmemory = \"256MiB\"\n",
			map[string]int32{"hop1": 1, "hop2": 1, "hop3": 1}, map[string]string{"hop3": "500m"}, map[string]string{"hop3": "256Mi"}},
		{"autoscaled has no replicas", chainSplit + "[deploy.autoscale.hop2]\nmin = 2\nmax = 5\ncpu_target = 60\n",
			map[string]int32{"hop1": 1, "hop2": -1, "hop3": 1}, map[string]string{"hop2": "1"}, nil},
		{"group of two", chainSplit + "[deploy.placements]\nedge = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n[deploy.replicas]\n\"hop2+hop3\" = 2\n",
			nil, nil, nil},
	}
	tests[4].src = strings.Replace(tests[4].src, `placement = "split"`, `placement = "edge"`, 1)
	tests[4].replicas = map[string]int32{"hop1": 1, "hop2-hop3": 2}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps := find[*appsv1.Deployment](render(t, tt.src, RenderOptions{}))
			if len(deps) != len(tt.replicas) {
				t.Fatalf("Deployments %v, want %v", slices.Sorted(maps.Keys(deps)), tt.replicas)
			}
			for name, want := range tt.replicas {
				d, ok := deps[name]
				if !ok {
					t.Fatalf("no Deployment %s", name)
				}
				switch got := d.Spec.Replicas; {
				case want == -1 && got != nil:
					t.Errorf("%s: replicas %d, want unset under an HPA", name, *got)
				case want >= 0 && (got == nil || *got != want):
					t.Errorf("%s: replicas %v, want %d", name, got, want)
				}
				c := d.Spec.Template.Spec.Containers[0]
				for res, wants := range map[corev1.ResourceName]map[string]string{corev1.ResourceCPU: tt.cpu, corev1.ResourceMemory: tt.mem} {
					req, hasReq := c.Resources.Requests[res]
					lim, hasLim := c.Resources.Limits[res]
					w, ok := wants[name]
					if !ok {
						if hasReq || hasLim {
							t.Errorf("%s: %s request %v limit %v, want none", name, res, req, lim)
						}
						continue
					}
					if req.String() != w || lim.String() != w {
						t.Errorf("%s: %s request %s limit %s, want %s for both", name, res, req.String(), lim.String(), w)
					}
				}
				if d.Spec.Template.Labels[LabelGroup] != name || d.Spec.Selector.MatchLabels[LabelGroup] != name {
					t.Errorf("%s: pod labels %v, selector %v", name, d.Spec.Template.Labels, d.Spec.Selector.MatchLabels)
				}
				if got := c.Args; !slices.Equal(got[:3], []string{"host", "--config", ConfigDir + "/" + name + ".json"}) {
					t.Errorf("%s: args %q", name, got)
				}
			}
		})
	}
}

func TestRenderHostConfigs(t *testing.T) {
	objs := render(t, chainSplit, RenderOptions{RunID: "r7"})
	cm := find[*corev1.ConfigMap](objs)[HostsConfigMap]
	if cm == nil {
		t.Fatal("no hosts ConfigMap")
	}
	svcs := find[*corev1.Service](objs)
	for _, g := range []string{"hop1", "hop2", "hop3"} {
		hc, err := runtime.DecodeHostConfig([]byte(cm.Data[g+".json"]))
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if hc.GetGroup() != g || hc.GetApp() != "chain" || hc.GetDeployment() != "r7" || hc.GetTransport() != "grpc" {
			t.Errorf("%s: config %v", g, hc)
		}
		l := hc.GetListeners()[g]
		if l.GetFd() != 0 || l.GetEndpoint().GetAddr() != ":9000" {
			t.Errorf("%s: listener %v, want :9000 bound by the host", g, l)
		}
		if (g == "hop1") != (hc.GetGateway() != nil) {
			t.Errorf("%s: gateway %v", g, hc.GetGateway())
		}
		// hop1 calls hop2, hop2 calls hop3: each peer is its Service.
		next := map[string]string{"hop1": "hop2", "hop2": "hop3"}[g]
		peers := hc.GetPeers()
		if next == "" {
			if len(peers) != 0 {
				t.Errorf("%s: peers %v, want none", g, peers)
			}
			continue
		}
		eps := peers[next].GetEndpoints()
		if len(eps) != 1 || eps[0].GetAddr() != next+".svclab-r7.svc:9000" {
			t.Errorf("%s: peer %s at %v", g, next, eps)
		}
		svc := svcs[next]
		if svc == nil || svc.Spec.Ports[0].Port != 9000 || svc.Spec.Selector[LabelGroup] != next || svc.Spec.Selector[LabelRun] != "r7" {
			t.Errorf("Service %s: %+v", next, svc)
		}
	}
	entry := svcs["hop1"]
	if entry == nil || len(entry.Spec.Ports) != 2 || entry.Spec.Ports[1].Port != GatewayPort {
		t.Errorf("entry Service %+v, want the listener and the gateway", entry)
	}
}

func TestRenderProbes(t *testing.T) {
	for _, tt := range []struct {
		transport string
		grpc      bool
	}{{"grpc", true}, {"http", false}, {"netrpc", false}} {
		t.Run(tt.transport, func(t *testing.T) {
			src := strings.Replace(chainSplit, `transport = "grpc"`, fmt.Sprintf("transport = %q", tt.transport), 1)
			d := find[*appsv1.Deployment](render(t, src, RenderOptions{}))["hop2"]
			c := d.Spec.Template.Spec.Containers[0]
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				if p == nil {
					t.Fatal("missing probe")
				}
				switch {
				case tt.grpc && (p.GRPC == nil || p.GRPC.Port != 9000):
					t.Errorf("probe %+v, want gRPC health on 9000", p.ProbeHandler)
				case !tt.grpc && p.GRPC != nil:
					t.Errorf("probe %+v: a gRPC probe on a %s listener", p.ProbeHandler, tt.transport)
				}
			}
			if tt.transport == "http" && (c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != HealthPath) {
				t.Errorf("http probe %+v, want GET %s", c.ReadinessProbe.ProbeHandler, HealthPath)
			}
		})
	}
}

func TestRenderAutoscale(t *testing.T) {
	src := chainSplit + `[deploy.resources.hop2]
cpu = 0.4
memory = "512MiB"
[deploy.autoscale.hop2]
min = 1
max = 15
cpu_target = 50
memory_target = 90
scale_down_window = "45s"
tolerance = 0.2
`
	hpas := find[*autoscalingv2.HorizontalPodAutoscaler](render(t, src, RenderOptions{}))
	if len(hpas) != 1 {
		t.Fatalf("HPAs %v, want hop2's only", slices.Sorted(maps.Keys(hpas)))
	}
	h := hpas["hop2"]
	if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != "hop2" {
		t.Errorf("target %+v", h.Spec.ScaleTargetRef)
	}
	if *h.Spec.MinReplicas != 1 || h.Spec.MaxReplicas != 15 {
		t.Errorf("min %d max %d", *h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	got := map[corev1.ResourceName]int32{}
	for _, m := range h.Spec.Metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource.Target.Type != autoscalingv2.UtilizationMetricType {
			t.Errorf("metric %+v", m)
			continue
		}
		got[m.Resource.Name] = *m.Resource.Target.AverageUtilization
	}
	if len(got) != 2 || got[corev1.ResourceCPU] != 50 || got[corev1.ResourceMemory] != 90 {
		t.Errorf("targets %v, want cpu 50 memory 90", got)
	}
	b := h.Spec.Behavior
	if *b.ScaleDown.StabilizationWindowSeconds != 45 {
		t.Errorf("scale-down window %d, want 45", *b.ScaleDown.StabilizationWindowSeconds)
	}
	if b.ScaleDown.Tolerance.String() != "200m" || b.ScaleUp.Tolerance.String() != "200m" {
		t.Errorf("tolerance %v / %v, want 0.2 both ways", b.ScaleDown.Tolerance, b.ScaleUp.Tolerance)
	}
	// The default tolerance is the cluster's own: nothing to set.
	h = find[*autoscalingv2.HorizontalPodAutoscaler](render(t, strings.Replace(src, "tolerance = 0.2\n", "", 1), RenderOptions{}))["hop2"]
	if h.Spec.Behavior.ScaleUp != nil || h.Spec.Behavior.ScaleDown.Tolerance != nil {
		t.Errorf("default tolerance rendered: %+v", h.Spec.Behavior)
	}
}

func TestRenderIstio(t *testing.T) {
	for _, tt := range []struct {
		name, extra      string
		inject, peerAuth bool
		ambient          bool
		sampling         float64
		metricsOff       bool
	}{
		{"none", "", false, false, false, -1, false},
		{"sidecar", "sidecar = \"istio\"\n", true, false, false, 0, true},
		{"mtls tracing metrics", "sidecar = \"istio\"\nmtls = true\ntracing = 0.25\nmetrics = true\n", true, true, false, 25, false},
		{"ambient", "sidecar = \"istio\"\nproxy_mode = \"node\"\nmtls = true\n", false, true, true, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(chainSplit, "placement = \"split\"\n", "placement = \"split\"\n"+tt.extra, 1) + withLoad
			objs := render(t, src, RenderOptions{})
			for name, d := range find[*appsv1.Deployment](objs) {
				if got := d.Spec.Template.Labels[IstioInjectLabel] == "true"; got != tt.inject {
					t.Errorf("%s: injected %v, want %v", name, got, tt.inject)
				}
			}
			job := find[*batchv1.Job](objs)[LoadJob]
			if got := job.Spec.Template.Labels[IstioInjectLabel] == "true"; got != tt.inject {
				t.Errorf("load Job injected %v, want %v", got, tt.inject)
			}
			ns := find[*corev1.Namespace](objs)["svclab-render"]
			if got := ns.Labels[IstioDataplaneLabel] == "ambient"; got != tt.ambient {
				t.Errorf("namespace labels %v, ambient want %v", ns.Labels, tt.ambient)
			}
			var pa, tel *unstructured.Unstructured
			hasPA := false
			for _, u := range objs {
				if x, ok := u.(*unstructured.Unstructured); ok {
					switch x.GetKind() {
					case "PeerAuthentication":
						hasPA, pa = true, x
					case "Telemetry":
						tel = x
					}
				}
			}
			if hasPA != tt.peerAuth {
				t.Fatalf("PeerAuthentication %v, want %v", hasPA, tt.peerAuth)
			}
			if hasPA {
				mode, _, _ := unstructured.NestedString(pa.Object, "spec", "mtls", "mode")
				if mode != "STRICT" || pa.GetAPIVersion() != IstioSecurityAPI || pa.GetNamespace() != "svclab-render" {
					t.Errorf("PeerAuthentication %v", pa.Object)
				}
			}
			if tt.sampling < 0 {
				if tel != nil {
					t.Errorf("Telemetry without Istio: %v", tel.Object)
				}
				return
			}
			tr, _, _ := unstructured.NestedSlice(tel.Object, "spec", "tracing")
			if len(tr) != 1 || tr[0].(map[string]any)["randomSamplingPercentage"] != tt.sampling {
				t.Errorf("tracing %v, want %g%%", tr, tt.sampling)
			}
			_, hasMetrics, _ := unstructured.NestedSlice(tel.Object, "spec", "metrics")
			if hasMetrics != tt.metricsOff {
				t.Errorf("metrics override %v, want %v", hasMetrics, tt.metricsOff)
			}
		})
	}
}

func TestRenderNodeSelectorAndLabels(t *testing.T) {
	src := chainSplit + withLoad + "[deploy.kube]\nnamespace = \"lab\"\nimage = \"registry.example/svclab:v1\"\n[deploy.kube.node_selector]\n\"kubernetes.io/hostname\" = \"vm2\"\n"
	objs := render(t, src, RenderOptions{RunID: "run-3"})
	pods := 0
	for _, o := range objs {
		if o.GetLabels()[LabelManagedBy] != ManagedBy || o.GetLabels()[LabelRun] != "run-3" {
			t.Errorf("%T %s: labels %v", o, o.GetName(), o.GetLabels())
		}
		if _, ok := o.(*corev1.Namespace); !ok && o.GetNamespace() != "lab" {
			t.Errorf("%T %s: namespace %q, want lab", o, o.GetName(), o.GetNamespace())
		}
		var pod *corev1.PodSpec
		switch x := o.(type) {
		case *appsv1.Deployment:
			pod = &x.Spec.Template.Spec
		case *batchv1.Job:
			pod = &x.Spec.Template.Spec
		}
		if pod == nil {
			continue
		}
		pods++
		if pod.NodeSelector["kubernetes.io/hostname"] != "vm2" || len(pod.NodeSelector) != 1 {
			t.Errorf("%s: node selector %v", o.GetName(), pod.NodeSelector)
		}
		if pod.Containers[0].Image != "registry.example/svclab:v1" {
			t.Errorf("%s: image %q", o.GetName(), pod.Containers[0].Image)
		}
	}
	if pods != 4 {
		t.Errorf("%d pod templates, want 3 Deployments and the Job", pods)
	}
	if objs[0].GetName() != "lab" {
		t.Errorf("first object %s, want the namespace", objs[0].GetName())
	}
	// Options win over the spec.
	objs = render(t, src, RenderOptions{Namespace: "other", Image: "img:2"})
	if objs[0].GetName() != "other" || find[*appsv1.Deployment](objs)["hop1"].Spec.Template.Spec.Containers[0].Image != "img:2" {
		t.Errorf("options not applied: %s", objs[0].GetName())
	}
}

func TestRenderLoadJob(t *testing.T) {
	for _, tt := range []struct {
		name, transport, extra string
		generators             int32
		target                 string
		protocol               string
	}{
		{"grpc one", "grpc", "", 1, "hop1.svclab-render.svc:9000", "grpc"},
		{"grpc four", "grpc", "[deploy.kube]\ngenerators = 4\n", 4, "hop1.svclab-render.svc:9000", "grpc"},
		{"http gateway", "http", "[deploy.kube]\ngenerators = 2\n", 2, "http://hop1.svclab-render.svc:8080", "http"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(chainSplit, `transport = "grpc"`, fmt.Sprintf("transport = %q", tt.transport), 1) +
				"[load]\nrate = 120\nwarmup = \"5s\"\nduration = \"30s\"\n" + tt.extra
			objs := render(t, src, RenderOptions{})
			job := find[*batchv1.Job](objs)[LoadJob]
			s := job.Spec
			if *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != tt.generators || *s.Parallelism != tt.generators {
				t.Errorf("job %v/%d/%d, want Indexed with %d", *s.CompletionMode, *s.Completions, *s.Parallelism, tt.generators)
			}
			// 2×(5s+30s) + the default 20s start timeout.
			if *s.BackoffLimit != 0 || *s.ActiveDeadlineSeconds != 90 {
				t.Errorf("backoff %d deadline %d, want 0 and 90", *s.BackoffLimit, *s.ActiveDeadlineSeconds)
			}
			args := s.Template.Spec.Containers[0].Args
			want := []string{"load", "-f", "/etc/svclab/load.toml", "--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", tt.generators), "--dir", "/out"}
			if !slices.Equal(args[:len(want)], want) || args[len(args)-1] != tt.target {
				t.Errorf("args %q, want %q … %s", args, want, tt.target)
			}
			var got struct{ Load load.Config }
			cm := find[*corev1.ConfigMap](objs)[LoadConfigMap]
			if err := toml.Unmarshal([]byte(cm.Data[LoadFile]), &got); err != nil {
				t.Fatal(err)
			}
			if got.Load.Rate != 120 || string(got.Load.Protocol) != tt.protocol || got.Load.Request == nil {
				t.Errorf("load.toml %+v", got.Load)
			}
			if err := got.Load.Validate(); err != nil {
				t.Errorf("load.toml does not validate: %v", err)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	s, err := spec.Parse("k.toml", []byte(chainSplit), "deploy.deployer=kube")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opts RenderOptions
		want string
	}{
		{RenderOptions{RunID: "Bad Run"}, `run id "Bad Run" cannot label`},
		{RenderOptions{Namespace: "No_Such"}, `deploy.kube.namespace: namespace "No_Such" is not a Kubernetes namespace name`},
	} {
		if _, err := Render(s, topo, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want %q", tt.opts, err, tt.want)
		}
	}
}

func TestDNSName(t *testing.T) {
	for in, want := range map[string]string{"hop2+hop3": "hop2-hop3", "Product_Catalog": "product-catalog", "a": "a"} {
		if got, err := dnsName(in); err != nil || got != want {
			t.Errorf("dnsName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	long := strings.Repeat("component+", 10) + "last"
	a, err := dnsName(long)
	if err != nil || len(a) != 63 || !strings.HasPrefix(a, "component-component-") {
		t.Errorf("dnsName(%d characters) = %q (%d), %v; want 63 characters keeping the start", len(long), a, len(a), err)
	}
	if b, _ := dnsName(long + "2"); b == a || len(b) != 63 {
		t.Errorf("two long names share %q", a)
	}
	if _, err := dnsName("+++"); err == nil {
		t.Error("dnsName(+++) made a name")
	}
}

// TestRenderBacking checks the shop's PostgreSQL: seeded from the app's
// own setup SQL, reached by the hosts at the address in the variable the
// local deployer sets, never scaled.
func TestRenderBacking(t *testing.T) {
	src := `
[app]
name = "shop"
products = 7
[deploy]
placement = "s1"
[deploy.placements]
s1 = [["gateway"], ["products", "orders"]]
[deploy.replicas]
products = 3
`
	objs := render(t, src, RenderOptions{RunID: "b1"})
	cm := find[*corev1.ConfigMap](objs)["backing-db-init"]
	if cm == nil || !strings.Contains(cm.Data["setup.sql"], "CREATE TABLE products") {
		t.Fatalf("setup ConfigMap %+v", cm)
	}
	deps := find[*appsv1.Deployment](objs)
	db := deps["backing-db"]
	if db == nil || *db.Spec.Replicas != 1 || db.Spec.Template.Spec.Containers[0].Image != PostgresImage {
		t.Fatalf("database Deployment %+v", db)
	}
	if svc := find[*corev1.Service](objs)["backing-db"]; svc == nil || svc.Spec.Ports[0].Port != 5432 || svc.Spec.Selector[LabelGroup] != "backing-db" {
		t.Errorf("database Service %+v", svc)
	}
	want := "host=backing-db.svclab-b1.svc port=5432 user=svclab dbname=svclab sslmode=disable"
	for _, g := range []string{"gateway", "products-orders"} {
		env := deps[g].Spec.Template.Spec.Containers[0].Env
		i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "SVCLAB_BACKING_DB" })
		if i < 0 || env[i].Value != want {
			t.Errorf("%s: env %v, want SVCLAB_BACKING_DB=%s", g, env, want)
		}
	}
	if *deps["products-orders"].Spec.Replicas != 3 {
		t.Errorf("products+orders replicas %d, want 3", *deps["products-orders"].Spec.Replicas)
	}

	// Another image of PostgreSQL, where the official one cannot be
	// pulled: the same Deployment, that image, and the note says so.
	s, topo := resolve(t, src+"[deploy.kube.backing_images]\npostgres = \"svclab.local/postgres:15\"\n")
	objs, err := Render(s, topo, RenderOptions{RunID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	if img := find[*appsv1.Deployment](objs)["backing-db"].Spec.Template.Spec.Containers[0].Image; img != "svclab.local/postgres:15" {
		t.Errorf("database image %q, want deploy.kube.backing_images.postgres", img)
	}
	if notes := strings.Join(Notes(s, topo), "\n"); !strings.Contains(notes, `backing service "db" runs the image svclab.local/postgres:15`) {
		t.Errorf("notes do not name the database's image:\n%s", notes)
	}
}

// BenchmarkRender renders S2's largest point with Istio, and writes it as
// YAML, as `svclab kube render` does per design point.
func BenchmarkRender(b *testing.B) {
	s, err := spec.Load("../../../experiments/s2-mesh.toml", "deploy.deployer=kube", "deploy.sidecar=istio", "deploy.mtls=true")
	if err != nil {
		b.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		objs, err := Render(s, topo, RenderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := YAML(objs); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRenderRedisBacking checks the boutique's Redis cart: a server pod
// behind a Service, ready only once it answers, and the cartstore's hosts
// given its address in the variable the local deployer sets, as a URL the
// app's Redis client reads.
func TestRenderRedisBacking(t *testing.T) {
	src := "[app]\nname = \"boutique\"\ncart_store = \"redis\"\n[deploy]\ntransport = \"grpc\"\n"
	objs := render(t, src, RenderOptions{RunID: "b2"})
	deps := find[*appsv1.Deployment](objs)
	db := deps["backing-cart"]
	if db == nil {
		t.Fatalf("no Deployment backing-cart among %v", slices.Sorted(maps.Keys(deps)))
	}
	c := db.Spec.Template.Spec.Containers[0]
	if *db.Spec.Replicas != 1 || c.Image != RedisImage || c.ReadinessProbe == nil || c.ReadinessProbe.Exec == nil {
		t.Errorf("Redis Deployment: replicas %d, container %+v", *db.Spec.Replicas, c)
	}
	if !slices.Contains(c.Args, "--maxmemory") || !slices.Contains(c.Args, "noeviction") {
		t.Errorf("Redis args %v lack the local server's memory limit", c.Args)
	}
	if svc := find[*corev1.Service](objs)["backing-cart"]; svc == nil || svc.Spec.Ports[0].Port != RedisPort || svc.Spec.Selector[LabelGroup] != "backing-cart" {
		t.Errorf("Redis Service %+v", svc)
	}
	want := "redis://backing-cart.svclab-b2.svc:6379/0"
	found := 0
	for name, d := range deps {
		if name == "backing-cart" {
			continue
		}
		env := d.Spec.Template.Spec.Containers[0].Env
		i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "SVCLAB_BACKING_CART" })
		if i < 0 || env[i].Value != want {
			t.Errorf("%s: env %v, want SVCLAB_BACKING_CART=%s", name, env, want)
		}
		found++
	}
	if found == 0 {
		t.Error("no host Deployment")
	}
	if _, err := goredis.ParseURL(want); err != nil {
		t.Errorf("the app's Redis client cannot read %s: %v", want, err)
	}
	notes := strings.Join(Notes(resolve(t, src)), "\n")
	if !strings.Contains(notes, `backing service "cart" runs the image redis:7`) {
		t.Errorf("notes do not name the Redis image:\n%s", notes)
	}
}
