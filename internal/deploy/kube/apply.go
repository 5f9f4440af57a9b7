package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
)

// apply creates the namespace, unless it exists, and server-side applies
// every object into it, in Render's order, but the backing services'
// first, waiting for their rollout (within timeout, as waitRollout)
// before the rest: a host whose database does not answer yet exits (the
// shop's products and orders), and its pod would restart, after the
// kubelet's back-off of 10 s and more, until it does. Locally too the
// backing servers are up before the hosts start.
func (dep *Deployment) apply(ctx context.Context, timeout time.Duration) error {
	if err := dep.ensureNamespace(ctx); err != nil {
		return err
	}
	dep.touched = true
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dep.client.Typed.Discovery()))
	for _, backing := range []bool{true, false} {
		for _, o := range dep.objects {
			if o.GetObjectKind().GroupVersionKind().Kind == "Namespace" || isBacking(o) != backing {
				continue // the Namespace is ensureNamespace's
			}
			if err := dep.applyOne(ctx, mapper, o); err != nil {
				return err
			}
		}
		if backing && slices.ContainsFunc(dep.objects, isBacking) {
			if err := dep.waitRollout(ctx, timeout, isBacking); err != nil {
				return err
			}
		}
	}
	return nil
}

// isBacking says whether o is a backing service's.
func isBacking(o Object) bool { return o.GetLabels()[LabelRole] == RoleBacking }

// ensureNamespace creates the run's namespace, labelled as Render labels
// it and annotated with its owner. A namespace that exists already (a
// deploy.kube.namespace the user made) is used, and given the labels
// Render puts on it that change what the cluster does (Istio ambient's
// istio.io/dataplane-mode), so that a run does what its render shows.
//
// A namespace the spec names is read before anything is created: with
// only namespace-scoped RBAC (a RoleBinding in it), creating a namespace
// is Forbidden even when it exists, so it is created only when absent.
func (dep *Deployment) ensureNamespace(ctx context.Context) error {
	var ns *corev1.Namespace
	for _, o := range dep.objects {
		if n, ok := o.(*corev1.Namespace); ok {
			ns = n.DeepCopy()
		}
	}
	if ns == nil {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dep.ns}}
	}
	nsClient := dep.client.Typed.CoreV1().Namespaces()
	if dep.namedNamespace {
		cur, err := nsClient.Get(ctx, dep.ns, metav1.GetOptions{})
		switch {
		case err == nil:
			return dep.labelNamespace(ctx, cur, clusterLabels(ns.Labels))
		case apierrors.IsForbidden(err):
			// RBAC of the namespace alone may not cover the Namespace
			// object: use it as deploy.kube.namespace says it exists,
			// unless it needs labels that cannot be checked.
			if l := clusterLabels(ns.Labels); len(l) > 0 {
				return fmt.Errorf("namespace %s: cannot read it to give it %s%s: %w; label it beforehand and grant get on it, or grant get and patch on it (docs/kube-rbac.yaml)",
					dep.ns, labelList(l), labelReason(l), err)
			}
			dep.logf("namespace %s: not readable by this user (%v); applying into it, as deploy.kube.namespace names it", dep.ns, err)
			return nil
		case !apierrors.IsNotFound(err):
			return apiError(dep.client, "get namespace "+dep.ns, err)
		}
	}
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	ns.Annotations[AnnotationOwner] = ownerValue()
	_, err := nsClient.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		dep.ownNamespace = true
		dep.logf("namespace %s created on %s (context %s)", dep.ns, dep.client.Server, dep.client.Context)
		return nil
	case apierrors.IsAlreadyExists(err):
		// Made since it was read, by someone else: use it as found.
		cur, err := nsClient.Get(ctx, dep.ns, metav1.GetOptions{})
		if err != nil {
			return apiError(dep.client, "get namespace "+dep.ns, err)
		}
		return dep.labelNamespace(ctx, cur, clusterLabels(ns.Labels))
	}
	return apiError(dep.client, "create namespace "+dep.ns, err)
}

// clusterLabels are the labels of a rendered namespace that a namespace
// svclab did not make also needs: all but svclab's own marks, which would
// make `svclab clean --kube` take it for a run's.
func clusterLabels(rendered map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range rendered {
		if k != LabelManagedBy && k != LabelRun {
			out[k] = v
		}
	}
	return out
}

// labelNamespace gives the existing namespace cur the labels it lacks of
// want, and remembers what they were, for Stop to put back.
func (dep *Deployment) labelNamespace(ctx context.Context, cur *corev1.Namespace, want map[string]string) error {
	missing := map[string]string{}
	for k, v := range want {
		if cur.Labels[k] != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		dep.logf("namespace %s exists; applying into it", dep.ns)
		return nil
	}
	before := map[string]*string{}
	for k := range missing {
		if v, ok := cur.Labels[k]; ok {
			before[k] = &v
		} else {
			before[k] = nil // a null in a merge patch removes it
		}
	}
	if err := dep.patchNamespaceLabels(ctx, missing); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("namespace %s exists without %s%s, and this user cannot label it: %w; label it beforehand (kubectl label namespace %s %s) or grant patch on it (docs/kube-rbac.yaml)",
				dep.ns, labelList(missing), labelReason(missing), err, dep.ns, labelArgs(missing))
		}
		return apiError(dep.client, "label namespace "+dep.ns, err)
	}
	dep.touched = true
	dep.restoreLabels = before
	dep.logf("namespace %s exists; labelled %s and applying into it", dep.ns, labelList(missing))
	return nil
}

// patchNamespaceLabels merge-patches the namespace's labels: a nil value
// removes one.
func (dep *Deployment) patchNamespaceLabels(ctx context.Context, labels any) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	_, err = dep.client.Typed.CoreV1().Namespaces().Patch(ctx, dep.ns, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// restoreNamespaceLabels puts back the labels labelNamespace changed on a
// namespace svclab did not make.
func (dep *Deployment) restoreNamespaceLabels(ctx context.Context) error {
	if len(dep.restoreLabels) == 0 {
		return nil
	}
	if err := dep.patchNamespaceLabels(ctx, dep.restoreLabels); err != nil && !apierrors.IsNotFound(err) {
		return apiError(dep.client, "restore the labels of namespace "+dep.ns, err)
	}
	return nil
}

// labelList is "the label k=v" or "the labels k1=v1, k2=v2", sorted.
func labelList(l map[string]string) string {
	if len(l) == 1 {
		return "the label " + labelArgs(l)
	}
	return "the labels " + strings.ReplaceAll(labelArgs(l), " ", ", ")
}

// labelArgs is l as kubectl label's arguments, sorted.
func labelArgs(l map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		out = append(out, k+"="+l[k])
	}
	return strings.Join(out, " ")
}

// labelReason says which spec key asked for a label, when one did.
func labelReason(l map[string]string) string {
	if _, ok := l[IstioDataplaneLabel]; ok {
		return " that Istio ambient needs (deploy.proxy_mode = \"node\")"
	}
	return ""
}

// applyOne server-side applies o, as field manager svclab, forcing
// conflicts: svclab owns every field it sets on its own objects.
func (dep *Deployment) applyOne(ctx context.Context, mapper meta.RESTMapper, o Object) error {
	gvk := o.GetObjectKind().GroupVersionKind()
	what := fmt.Sprintf("%s %s", gvk.Kind, o.GetName())
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("apply %s: the cluster does not serve %s (install what defines it, e.g. Istio's CRDs for its resources): %w", what, gvk.GroupVersion(), err)
		}
		return apiError(dep.client, "apply "+what, err)
	}
	u, err := toUnstructured(o)
	if err != nil {
		return fmt.Errorf("apply %s: %w", what, err)
	}
	var ri interface {
		Apply(ctx context.Context, name string, obj *unstructured.Unstructured, options metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error)
	} = dep.client.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		u.SetNamespace(dep.ns)
		ri = dep.client.Dynamic.Resource(m.Resource).Namespace(dep.ns)
	}
	if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return apiError(dep.client, "apply "+what, err)
	}
	dep.logf("applied %s", what)
	return nil
}

func toUnstructured(o Object) (*unstructured.Unstructured, error) {
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	// A server-side apply body carries no status and no creation time.
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// apiError says what an API error means for the run: the cluster's own
// words (Forbidden names the user, verb and resource RBAC lacks), or that
// the API server cannot be reached at all.
func apiError(c *Client, what string, err error) error {
	var ue *url.Error
	var ne net.Error
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: Forbidden: %w (the RBAC a run needs is in docs/kube-rbac.yaml)", what, err)
	case errors.As(err, &ue), errors.As(err, &ne):
		return fmt.Errorf("%s: API server %s (context %s) unreachable: %w", what, c.Server, c.Context, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// propagation deletes what an object owns with it, in the background.
var propagation = metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
