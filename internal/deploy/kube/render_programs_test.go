package kube_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// programsSpec is the exec app's programs as images, for a cluster.
const programsSpec = `[app]
name = "exec"
entry = "frontend"
[app.components.frontend]
image = "registry.example/shop/frontend:1.4"
port = 8080
protocol = "http"
health = "/healthz"
env = { CART_ADDR = "{addr:cart}", LISTEN = "{listen}" }
[app.components.cart]
image = "redis:7"
port = 6379
protocol = "tcp"
[deploy]
deployer = "kube"
[deploy.replicas]
frontend = 2
[load]
rate = 50
[load.request]
path = "/"
`

// TestProgramsRender: `svclab kube render` of the exec app's programs
// gives a Deployment of each image (its replicas, its port, its health
// check as probes, its callees' Services in its env) and a Service each,
// and a load Job against the entry's Service; the manifests are valid
// against Kubernetes' schemas.
func TestProgramsRender(t *testing.T) {
	s, err := spec.Parse("p.toml", []byte(programsSpec))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kube.Render(s, topo, kube.RenderOptions{RunID: "validate"})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]*appsv1.Deployment{}
	svcs := map[string]*corev1.Service{}
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			deps[v.Name] = v
		case *corev1.Service:
			svcs[v.Name] = v
		}
	}
	fe := deps["frontend"]
	if fe == nil || deps["cart"] == nil || len(deps) != 2 {
		t.Fatalf("deployments %v", deps)
	}
	c := fe.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if c.Image != "registry.example/shop/frontend:1.4" || *fe.Spec.Replicas != 2 || c.Ports[0].ContainerPort != 8080 ||
		c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/healthz" ||
		env["CART_ADDR"] != "cart.svclab-validate.svc:6379" || env["LISTEN"] != "0.0.0.0:8080" {
		t.Errorf("frontend: image %s, replicas %d, ports %v, probe %+v, env %v", c.Image, *fe.Spec.Replicas, c.Ports, c.ReadinessProbe, env)
	}
	if p := deps["cart"].Spec.Template.Spec.Containers[0].ReadinessProbe; p.TCPSocket == nil {
		t.Errorf("cart's probe %+v, want a TCP connect", p)
	}
	if svc := svcs["cart"]; svc == nil || svc.Spec.Ports[0].Port != 6379 || svcs["frontend"] == nil {
		t.Errorf("services %v", svcs)
	}
	y, err := kube.YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "http://frontend.svclab-validate.svc:8080") {
		t.Errorf("the load Job does not target the entry's Service:\n%s", y)
	}

	bin := kubeValidatePath()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("kubernetes-validate is not installed (%v): run `make kube-validate`", err)
	}
	f := filepath.Join(t.TempDir(), "programs.yaml")
	if err := os.WriteFile(f, y, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), bin, "-k", schemaVersion, "--strict", "--quiet", f).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("kubernetes-validate: %v\n%s", err, out)
	}
}

// TestProgramsRenderNeedsImages: a program with a command alone cannot
// run on a cluster, which the kube deployer says at its key.
func TestProgramsRenderNeedsImages(t *testing.T) {
	src := strings.Replace(programsSpec, `image = "redis:7"
port = 6379`, `command = ["redis-server", "--port", "{port}"]`, 1)
	s, err := spec.Parse("p.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = runtime.Resolve(s)
	if want := `p.toml:10: app.components.cart: has no image: the kube deployer runs a program from an image`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("resolve: %v\nwant %s", err, want)
	}
}
