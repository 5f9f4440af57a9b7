package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/svclab/svclab/internal/tempdir"
)

// remove deletes what the deployment made: its namespace when it made it,
// else the objects it applied (and the load Job), and waits for them to go.
func (dep *Deployment) remove(ctx context.Context) error {
	if dep.ownNamespace {
		err := deleteNamespace(ctx, dep.client, dep.ns)
		if err == nil {
			dep.logf("namespace %s deleted", dep.ns)
		}
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dep.client.Typed.Discovery()))
	var errs []error
	objs := slices.Clone(dep.objects)
	if dep.loadJob != nil {
		objs = append(objs, dep.loadJob)
	}
	for _, o := range slices.Backward(objs) {
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "Namespace" {
			continue
		}
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue // never applied: the cluster does not serve its kind
		}
		err = dep.client.Dynamic.Resource(m.Resource).Namespace(dep.ns).Delete(ctx, o.GetName(), propagation)
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, apiError(dep.client, fmt.Sprintf("delete %s %s", gvk.Kind, o.GetName()), err))
		}
	}
	if err := dep.restoreNamespaceLabels(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteNamespace deletes ns and waits until the cluster has removed it
// (its finalizers ran), within ctx.
func deleteNamespace(ctx context.Context, c *Client, ns string) error {
	err := c.Typed.CoreV1().Namespaces().Delete(ctx, ns, propagation)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return apiError(c, "delete namespace "+ns, err)
	}
	for {
		_, err := c.Typed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still terminating: %w", ns, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// Leftover is a namespace of a run whose svclab is gone.
type Leftover struct {
	Namespace string
	// Owner is the AnnotationOwner value: host, PID and start time.
	Owner string
}

// Leftovers lists the namespaces svclab made for runs whose svclab
// process is dead. Only namespaces made from this machine can be judged;
// others are returned in foreign, for the caller to mention.
func Leftovers(ctx context.Context, c *Client) (dead []Leftover, foreign []Leftover, err error) {
	list, err := c.Typed.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
	if err != nil {
		return nil, nil, apiError(c, "list namespaces", err)
	}
	me := hostname()
	for _, ns := range list.Items {
		v, ok := ns.Annotations[AnnotationOwner]
		if !ok {
			continue // a namespace the user named and made: not svclab's to delete
		}
		var host string
		var o tempdir.Owner
		if _, err := fmt.Sscanf(v, "%s %d %d", &host, &o.PID, &o.Start); err != nil {
			continue
		}
		l := Leftover{Namespace: ns.Name, Owner: v}
		switch {
		case host != me:
			foreign = append(foreign, l)
		case !o.Alive():
			dead = append(dead, l)
		}
	}
	return dead, foreign, nil
}

// Clean deletes the namespaces Leftovers finds dead, through context kctx
// (the current one when empty), and returns them; `svclab clean --kube`
// and `svclab run --resume` call it.
func Clean(ctx context.Context, kctx string) (removed []Leftover, foreign []Leftover, err error) {
	c, err := Connect(kctx)
	if err != nil {
		return nil, nil, err
	}
	dead, foreign, err := Leftovers(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, l := range dead {
		dctx, cancel := context.WithTimeout(ctx, deleteTimeout)
		err := deleteNamespace(dctx, c, l.Namespace)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, l)
	}
	return removed, foreign, errors.Join(errs...)
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}
