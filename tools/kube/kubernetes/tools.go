//go:build tools

// Package tools pins the commands this module builds: the control plane
// internal/deploy/kube/kubetest starts (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler), kwok's fake nodes and
// metrics-server, and the real node's agents (kubelet, kube-proxy) of make
// cluster and the real node's tests.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server"
)
