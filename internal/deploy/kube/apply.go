package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
)

// apply creates the namespace, unless it exists, and server-side applies
// every object into it, in Render's order.
func (dep *Deployment) apply(ctx context.Context) error {
	if err := dep.ensureNamespace(ctx); err != nil {
		return err
	}
	dep.touched = true
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dep.client.Typed.Discovery()))
	for _, o := range dep.objects {
		if o.GetObjectKind().GroupVersionKind().Kind == "Namespace" {
			continue // ensureNamespace's
		}
		if err := dep.applyOne(ctx, mapper, o); err != nil {
			return err
		}
	}
	return nil
}

// ensureNamespace creates the run's namespace, labelled as Render labels
// it and annotated with its owner; a namespace that exists already (a
// deploy.kube.namespace the user made) is used as it is.
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
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	ns.Annotations[AnnotationOwner] = ownerValue()
	_, err := dep.client.Typed.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		dep.ownNamespace = true
		dep.logf("namespace %s created on %s (context %s)", dep.ns, dep.client.Server, dep.client.Context)
		return nil
	case apierrors.IsAlreadyExists(err):
		dep.logf("namespace %s exists; applying into it", dep.ns)
		return nil
	}
	return apiError(dep.client, "create namespace "+dep.ns, err)
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
