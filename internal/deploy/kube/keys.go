package kube

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// DefaultGenerators is how many load generator pods run a design point's
// load when deploy.kube.generators is left out.
const DefaultGenerators = 1

// MaxGenerators bounds deploy.kube.generators: one indexed Job's pods,
// each driving a share of the load.
const MaxGenerators = 1000

// Keys is [deploy.kube]: where and how the kube deployer runs. The keys
// are checked whatever deploy.deployer says (Traits.DecodeKeys), so that
// one spec both runs locally and renders for a cluster (`svclab kube
// render`).
type Keys struct {
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
	// BackingImages names, per kind of backing service (postgres, redis),
	// the image its pod runs instead of the official one (PostgresImage,
	// RedisImage): a copy in a registry the cluster reaches, or a
	// stand-in with the same interface where none is (the real node's
	// PostgreSQL, docs/KUBERNETES.md).
	BackingImages map[string]string `toml:"backing_images"`
}

// KeysOf decodes and checks [deploy.kube] of s, its defaults filled.
// Every mistake is reported, each at its key.
func KeysOf(s *spec.Spec) (Keys, error) {
	var k Keys
	// The values that decoded are checked beside the keys that did not.
	var errs spec.Errors
	errs.Add(s.Decode("deploy.kube", &k))
	if !s.Written("deploy.kube.generators") {
		k.Generators = DefaultGenerators
	} else if k.Generators < 1 || k.Generators > MaxGenerators {
		errs.AddLater(s.Errorf("deploy.kube.generators", "must be a number of load pods from 1 to %d, got %d", MaxGenerators, k.Generators))
	}
	if s.Written("deploy.kube.namespace") {
		if msgs := validation.IsDNS1123Label(k.Namespace); len(msgs) > 0 {
			errs.AddLater(s.Errorf("deploy.kube.namespace", "not a Kubernetes namespace name %q: %s (leave the key out for a fresh svclab-<run> namespace per run)", k.Namespace, strings.Join(msgs, "; ")))
		}
	}
	if s.Written("deploy.kube.image") && strings.TrimSpace(k.Image) == "" {
		errs.AddLater(s.Errorf("deploy.kube.image", "must name an image, e.g. \"registry.example/svclab:v1\" (see `svclab image --push`)"))
	}
	for _, kind := range slices.Sorted(maps.Keys(k.BackingImages)) {
		at := spec.KeyOf("deploy", "kube", "backing_images", kind)
		if _, ok := officialImages[kind]; !ok {
			errs.AddLater(s.Errorf(at, "not a kind of backing service: %s", strings.Join(slices.Sorted(maps.Keys(officialImages)), " or ")))
		} else if strings.TrimSpace(k.BackingImages[kind]) == "" {
			errs.AddLater(s.Errorf(at, "must name an image, e.g. %q", officialImages[kind]))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(k.NodeSelector)) {
		at := spec.KeyOf("deploy", "kube", "node_selector", key)
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			errs.AddLater(s.Errorf(at, "not a Kubernetes label key: %s", strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(k.NodeSelector[key]); len(msgs) > 0 {
			errs.AddLater(s.Errorf(at, "not a Kubernetes label value %q: %s", k.NodeSelector[key], strings.Join(msgs, "; ")))
		}
	}
	return k, errs.Err()
}

// decodeKeys is Traits.DecodeKeys.
func decodeKeys(s *spec.Spec) error {
	_, err := KeysOf(s)
	return err
}

// checkCounts bounds the replica counts a spec asks of the cluster by
// the Kubernetes API's types: a Deployment's replicas and an HPA's
// minReplicas and maxReplicas are int32, and a larger count would render
// wrapped (2^32+2 replicas as 2).
func checkCounts(s *spec.Spec) error {
	var errs []error
	tooMany := func(key string, n int) {
		if n > math.MaxInt32 {
			errs = append(errs, s.Errorf(key, "must be at most %d, the largest count a Kubernetes Deployment or HorizontalPodAutoscaler holds (int32), got %d", math.MaxInt32, n))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Deploy.Replicas)) {
		tooMany(spec.ScalingKey("replicas", name), s.Deploy.Replicas[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.Deploy.Autoscale)) {
		a, key := s.Deploy.Autoscale[name], spec.ScalingKey("autoscale", name)
		tooMany(key+".min", a.Min)
		tooMany(key+".max", a.Max)
	}
	return errors.Join(errs...)
}

// checkSpec is Traits.CheckSpec: it refuses [deploy.faults] and renders
// the design point once, so that what only a render finds (a group on
// two hosts, a namespace that is no Kubernetes name, replicas past the
// API's int32) stops `svclab plan` and a run before anything starts, and
// before a kubeconfig is needed.
func checkSpec(s *spec.Spec, topo *runtime.Topology) error {
	_, err := Render(s, topo, RenderOptions{})
	return spec.Join(checkFaults(s), err)
}
