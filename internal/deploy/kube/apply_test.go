package kube

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// forbid makes the fake API server answer verb on namespaces with
// Forbidden, as it does a user whose RBAC is namespace-scoped.
func forbid(c *fake.Clientset, verb string) {
	c.PrependReactor(verb, "namespaces", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "lab", errors.New("RBAC: not allowed"))
	})
}

// TestEnsureNamespace: a namespace the spec names and the user made
// beforehand is used without creating it, so that namespace-scoped RBAC
// is enough, and it gets the labels its render shows (Istio ambient), or
// the run fails saying how to give them; a namespace that does not exist
// is created and owned.
func TestEnsureNamespace(t *testing.T) {
	plain := chainSplit + "[deploy.kube]\nnamespace = \"lab\"\n"
	ambient := strings.Replace(chainSplit, "[deploy]\n", "[deploy]\nsidecar = \"istio\"\nproxy_mode = \"node\"\n", 1) + "[deploy.kube]\nnamespace = \"lab\"\n"
	for _, tt := range []struct {
		name     string
		src      string
		existing map[string]string // the namespace's labels; nil: no namespace
		forbid   []string          // verbs on namespaces the user lacks
		want     string            // error; "" for none
		own      bool              // Deploy made the namespace
		label    string            // the ambient label after ensureNamespace
	}{
		{name: "made beforehand, namespace-scoped RBAC", src: plain, existing: map[string]string{}, forbid: []string{"create", "patch"}},
		{name: "not even readable", src: plain, existing: map[string]string{}, forbid: []string{"get", "create", "patch"}},
		{name: "absent", src: plain, own: true},
		{name: "absent and not creatable", src: plain, forbid: []string{"create"}, want: "create namespace lab: Forbidden"},
		{name: "ambient labelled", src: ambient, existing: map[string]string{"team": "x"}, forbid: []string{"create"}, label: "ambient"},
		{name: "ambient labelled beforehand", src: ambient, existing: map[string]string{IstioDataplaneLabel: "ambient"}, forbid: []string{"create", "patch"}, label: "ambient"},
		{name: "ambient not labellable", src: ambient, existing: map[string]string{}, forbid: []string{"create", "patch"},
			want: `namespace lab exists without the label istio.io/dataplane-mode=ambient that Istio ambient needs (deploy.proxy_mode = "node"), and this user cannot label it`},
		{name: "ambient not readable", src: ambient, existing: map[string]string{}, forbid: []string{"get", "create", "patch"},
			want: "namespace lab: cannot read it to give it the label istio.io/dataplane-mode=ambient"},
		{name: "ambient absent", src: ambient, own: true, label: "ambient"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset()
			ctx := context.Background()
			if tt.existing != nil {
				if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab", Labels: tt.existing}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, v := range tt.forbid {
				forbid(c, v)
			}
			dep := &Deployment{client: &Client{Typed: c}, ns: "lab", namedNamespace: true, objects: render(t, tt.src, RenderOptions{RunID: "e1"})}
			err := dep.ensureNamespace(ctx)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if dep.ownNamespace != tt.own {
				t.Errorf("ownNamespace %v, want %v", dep.ownNamespace, tt.own)
			}
			if slices.Contains(tt.forbid, "get") {
				return // nothing to read back as this user
			}
			ns, err := c.CoreV1().Namespaces().Get(ctx, "lab", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ns.Labels[IstioDataplaneLabel]; got != tt.label {
				t.Errorf("label %s = %q, want %q", IstioDataplaneLabel, got, tt.label)
			}
			for k, v := range tt.existing {
				if ns.Labels[k] != v {
					t.Errorf("label %s = %q, was %q: a user's label changed", k, ns.Labels[k], v)
				}
			}
			if !tt.own && (ns.Labels[LabelManagedBy] != "" || ns.Labels[LabelRun] != "") {
				t.Errorf("a user's namespace got svclab's marks %v, which `svclab clean --kube` looks for", ns.Labels)
			}
			// Stop puts a user's namespace back as it was.
			if err := dep.restoreNamespaceLabels(ctx); err != nil {
				t.Fatal(err)
			}
			ns, _ = c.CoreV1().Namespaces().Get(ctx, "lab", metav1.GetOptions{})
			if !tt.own && ns.Labels[IstioDataplaneLabel] != tt.existing[IstioDataplaneLabel] {
				t.Errorf("after Stop: label %s = %q, want %q as before the run", IstioDataplaneLabel, ns.Labels[IstioDataplaneLabel], tt.existing[IstioDataplaneLabel])
			}
		})
	}
}
