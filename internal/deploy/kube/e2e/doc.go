// Package e2e holds the kube deployer's tests against a real control plane
// (internal/deploy/kube/kubetest): apply of a rendered design point,
// rollout on kwok's nodes, the HPA, the load Job and Istio's resources
// accepted, the pods' resource samples read through the metrics API, and
// the namespace deleted after success, failure and kill -9.
//
// Tests that look only at their own namespace run in parallel
// (t.Parallel), after the ones that look at every namespace svclab
// manages or at the whole cluster; the pods' resource samples wait on
// metrics-server's scrapes for more than a minute, and the others overlap
// that wait.
//
// They live apart from package kube so that its other tests need no
// cluster.
package e2e
