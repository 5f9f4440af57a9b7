// The pod sandbox's process of the real node (make cluster): what
// Kubernetes' pause image runs, built here because no registry is
// reachable to pull registry.k8s.io/pause.
module github.com/svclab/svclab/tools/kube/pause

go 1.26
