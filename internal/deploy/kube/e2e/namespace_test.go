package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// runnerRules are docs/kube-rbac.yaml's rules without the namespace rule,
// which that file says can go when deploy.kube.namespace is made
// beforehand.
func runnerRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile("../../../../docs/kube-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &role); err != nil {
		t.Fatalf("docs/kube-rbac.yaml: %v", err)
	}
	rules := slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "namespaces") })
	if len(rules) == len(role.Rules) {
		t.Fatal("docs/kube-rbac.yaml has no rule on namespaces to leave out")
	}
	return rules
}

// TestPremadeNamespaceRoleBinding: a run into a namespace made beforehand
// needs only a Role in it, as docs/kube-rbac.yaml says; Istio ambient
// there needs get and patch on the namespace too, to label it as its
// render shows, and Stop takes the label off again and leaves the
// namespace.
func TestPremadeNamespaceRoleBinding(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	istioCRDs(t, c)
	ctx := context.Background()
	// Its own name each time: a namespace of an earlier -count is still
	// terminating.
	ns := fmt.Sprintf("premade-%d", time.Now().UnixNano()%1e9)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "lab"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "svclab-runner", Namespace: ns}, Rules: runnerRules(t)}
	if _, err := c.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "svclab-runner", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "svclab-runner"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubetest.NoRBACUser}},
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := c.ClientFor(t, kubetest.NoRBACContext)
	granted(t, func() error { _, err := user.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); return err })
	base := design(t, c, "60s", "context = \""+kubetest.NoRBACContext+"\"\nnamespace = \""+ns+"\"")
	ambientSpec, err := base.Spec.With(map[string]any{"deploy.sidecar": "istio", "deploy.proxy_mode": "node"})
	if err != nil {
		t.Fatal(err)
	}
	ambient, err := runtime.Resolve(ambientSpec)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := deploy.Lookup(kube.Name)
	run := func(topo *runtime.Topology) error {
		dep, err := d.Deploy(ctx, topo, deploy.Options{})
		if err != nil {
			return err
		}
		got, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := kube.Namespace(topo.Spec, kube.RenderOptions{}); dep.(*kube.Deployment).Namespace() != want || want != ns {
			t.Errorf("deployed into %s, want %s", dep.(*kube.Deployment).Namespace(), ns)
		}
		ambientOn := topo.Spec.Deploy.ProxyMode == spec.ProxyModeNode
		if got.Labels[kube.IstioDataplaneLabel] == "ambient" != ambientOn {
			t.Errorf("during the run: namespace labels %v, ambient %v", got.Labels, ambientOn)
		}
		if err := dep.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		got, err = c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the user's namespace is gone after Stop: %v", err)
		}
		if _, ok := got.Labels[kube.IstioDataplaneLabel]; ok || got.Labels["team"] != "lab" {
			t.Errorf("after Stop: namespace labels %v, want them as before the run", got.Labels)
		}
		deps, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(deps.Items) != 0 {
			t.Errorf("after Stop: %v, %d Deployments left", err, len(deps.Items))
		}
		return nil
	}
	if err := run(base); err != nil {
		t.Fatalf("a run with a Role in its pre-made namespace: %v", err)
	}
	err = run(ambient)
	if err == nil || !strings.Contains(err.Error(), "cannot read it to give it the label istio.io/dataplane-mode=ambient") {
		t.Fatalf("ambient without rights on the namespace: %v", err)
	}
	// With get and patch on its own namespace, which a Role in it grants.
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "patch"}})
	if _, err := c.Client.RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	granted(t, func() error { _, err := user.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return err })
	if err := run(ambient); err != nil {
		t.Fatalf("ambient with get and patch on the namespace: %v", err)
	}
}

// granted waits until the API server's RBAC authorizer, which learns of a
// new Role or RoleBinding from its informers a moment after the write,
// lets request through.
func granted(t *testing.T, request func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := request()
		if !apierrors.IsForbidden(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Role is not in effect after 10 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
