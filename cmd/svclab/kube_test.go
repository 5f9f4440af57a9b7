package main

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/yaml"
)

// TestKubeRender renders a design point by number and reads its HPA back
// from the YAML, so the header, the point chosen and the multi-document
// stream are what a user pipes to kubectl.
func TestKubeRender(t *testing.T) {
	t.Parallel()
	out, stderr, code := svclab(t, t.Context(), nil, "kube", "render", "../../experiments/s1-hpa.toml", "--point", "6",
		"--set", "deploy.kube.image=registry.example/svclab:v1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	header, _, _ := strings.Cut(out, "---\n")
	for _, want := range []string{
		"# svclab kube render ../../experiments/s1-hpa.toml: design point 6 of 9\n",
		// Point 6 (index 5) of a 3×3 design, the first factor varying
		// fastest: cpu_target's third level, memory_target's second.
		"# levels: deploy.autoscale.products.cpu_target=90 deploy.autoscale.products.memory_target=70\n",
		"# note: app.ingress = \"nginx\" is not rendered",
	} {
		if !strings.Contains(header, want) {
			t.Errorf("header lacks %q:\n%s", want, header)
		}
	}
	if strings.Contains(header, "deploy.kube.image is not set") {
		t.Errorf("header says the image is not set, though --set gave it:\n%s", header)
	}
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	for _, doc := range strings.Split(out, "\n---\n") {
		if !strings.Contains(doc, "kind: HorizontalPodAutoscaler") {
			continue
		}
		hpa = new(autoscalingv2.HorizontalPodAutoscaler)
		if err := yaml.UnmarshalStrict([]byte(doc), hpa); err != nil {
			t.Fatal(err)
		}
	}
	if hpa == nil {
		t.Fatalf("no HorizontalPodAutoscaler in:\n%s", out)
	}
	got := map[string]int32{}
	for _, m := range hpa.Spec.Metrics {
		got[string(m.Resource.Name)] = *m.Resource.Target.AverageUtilization
	}
	if got["cpu"] != 90 || got["memory"] != 70 || hpa.Spec.MaxReplicas != 6 {
		t.Errorf("HPA targets %v max %d, want cpu 90 memory 70 max 6", got, hpa.Spec.MaxReplicas)
	}
}

func TestKubeRenderErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--point", "10"}, 2, "--point 10: ../../experiments/s1-hpa.toml has design points 1 to 9"},
		{[]string{"--set", "deploy.kube.generators=0"}, 2, "--set deploy.kube.generators=0: deploy.kube.generators: must be a number of load pods from 1 to 1000, got 0"},
		// int32 wrapped: 2^32+2 replicas rendered as 2, 2^31 as negative.
		{[]string{"--set", "deploy.replicas.gateway=4294967298"}, 2, "--set deploy.replicas.gateway=4294967298: deploy.replicas.gateway: must be at most 2147483647, the largest count a Kubernetes Deployment or HorizontalPodAutoscaler holds (int32)"},
		{[]string{"--set", "deploy.autoscale.products.max=2147483648"}, 2, "--set deploy.autoscale.products.max=2147483648: deploy.autoscale.products.max: must be at most 2147483647"},
	} {
		_, stderr, code := svclab(t, t.Context(), nil, append([]string{"kube", "render", "../../experiments/s1-hpa.toml"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// TestKubeRenderHelp: --point's usage names its type, not a phrase of its
// text (pflag takes a backquoted word as the flag's placeholder).
func TestKubeRenderHelp(t *testing.T) {
	t.Parallel()
	out, stderr, code := svclab(t, t.Context(), nil, "kube", "render", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "--point int ") {
		t.Errorf("--point's usage line is not \"--point int\":\n%s", out)
	}
}

// TestPlanKubeSpecErrors: what a cluster run cannot do stops `svclab plan`
// with exit 2 and the file, line and key, before a kubeconfig is read.
func TestPlanKubeSpecErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"../../experiments/faults.toml"},
			"faults.toml:19: deploy.faults.link_cut: the kube deployer cannot inject faults"},
		{[]string{"../../experiments/s1-hpa.toml", "--set", `deploy.hosts={vm1 = {groups = ["nope"]}}`},
			`deploy.hosts.vm1.groups: placement`},
	} {
		_, stderr, code := svclab(t, t.Context(), []string{"KUBECONFIG=/nonexistent"}, append([]string{"plan", "--set", "deploy.deployer=kube"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}
