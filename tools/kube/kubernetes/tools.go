//go:build tools

// Package tools pins the Kubernetes commands this module builds: the
// control plane internal/deploy/kube/kubetest starts, and the node agents
// (kubelet, kube-proxy) of the real node (make cluster).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
