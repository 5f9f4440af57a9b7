package spec

import (
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DeployerKube is the value of deploy.deployer that runs a spec on a
// Kubernetes cluster (internal/deploy/kube, docs/KUBERNETES.md).
const DeployerKube = "kube"

// SidecarIstio is the value of deploy.sidecar that leaves the data plane
// to Istio: the cluster injects its proxy beside every pod, and the mesh
// keys become Istio resources. Only the kube deployer has it, as no local
// process can be given an Istio sidecar.
const SidecarIstio = "istio"

// DefaultKubeGenerators is how many load generator pods run a design
// point's load when deploy.kube.generators is left out.
const DefaultKubeGenerators = 1

// MaxKubeGenerators bounds deploy.kube.generators: one indexed Job's
// pods, each driving a share of the load.
const MaxKubeGenerators = 1000

// Kube is [deploy.kube]: where and how the kube deployer runs. The keys
// are read whatever deploy.deployer says, so that one spec both runs
// locally and renders for a cluster (`svclab kube render`).
type Kube struct {
	// Context is the kubeconfig context to use; empty for the current one.
	Context string `toml:"context"`
	// Namespace is where a run's objects go; empty for a fresh
	// "svclab-<run>" namespace per run, deleted after it.
	Namespace string `toml:"namespace"`
	// Image is the svclab image the pods run (`svclab image --push`).
	Image string `toml:"image"`
	// NodeSelector is set on every pod svclab makes: the labels a node
	// must have to run it.
	NodeSelector map[string]string `toml:"node_selector"`
	// Generators is how many load generator pods share the load.
	Generators int `toml:"generators"`
}

// checkKube checks [deploy.kube] and fills its defaults.
func (s *Spec) checkKube() error {
	k := &s.Deploy.Kube
	if !s.written("deploy.kube.generators") {
		k.Generators = DefaultKubeGenerators
	} else if k.Generators < 1 || k.Generators > MaxKubeGenerators {
		return s.Errorf("deploy.kube.generators", "must be a number of load pods from 1 to %d, got %d", MaxKubeGenerators, k.Generators)
	}
	if s.written("deploy.kube.namespace") {
		if errs := validation.IsDNS1123Label(k.Namespace); len(errs) > 0 {
			return s.Errorf("deploy.kube.namespace", "not a Kubernetes namespace name %q: %s (leave the key out for a fresh svclab-<run> namespace per run)", k.Namespace, strings.Join(errs, "; "))
		}
	}
	if s.written("deploy.kube.image") && strings.TrimSpace(k.Image) == "" {
		return s.Errorf("deploy.kube.image", "must name an image, e.g. \"registry.example/svclab:v1\" (see `svclab image --push`)")
	}
	for _, key := range slices.Sorted(maps.Keys(k.NodeSelector)) {
		at := "deploy.kube.node_selector." + quoteKeyPart(key)
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return s.Errorf(at, "not a Kubernetes label key: %s", strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(k.NodeSelector[key]); len(errs) > 0 {
			return s.Errorf(at, "not a Kubernetes label value %q: %s", k.NodeSelector[key], strings.Join(errs, "; "))
		}
	}
	return nil
}

// checkIstio checks deploy.sidecar = "istio": a kube deployer's level,
// which needs a network transport as every sidecar does. Istio's sidecars
// balance each request, so replicas and the autoscaler stay allowed.
func (s *Spec) checkIstio() error {
	d := &s.Deploy
	if d.Deployer != DeployerKube {
		return s.Errorf("deploy.sidecar", "sidecar %q runs only on a Kubernetes cluster: set deploy.deployer = %q, or choose one of %s for deployer %q", SidecarIstio, DeployerKube, strings.Join(Sidecars, ", "), d.Deployer)
	}
	if d.Transport == "inproc" {
		return s.Errorf("deploy.sidecar", "sidecar %q needs a network transport, but deploy.transport is \"inproc\", which never leaves its process; choose grpc, http, netrpc or protorpc", SidecarIstio)
	}
	return nil
}

// maxCores is the most CPU a process's limit may ask for: this machine's
// cores locally; on a cluster the nodes' size is unknown here, and the
// scheduler refuses a pod no node can hold.
func (s *Spec) maxCores(machine float64) float64 {
	if s.Deploy.Deployer == DeployerKube {
		return math.Inf(1)
	}
	return machine
}
