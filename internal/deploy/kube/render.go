// Package kube runs a spec's design points on a Kubernetes cluster. This
// file and the other render*.go files turn one design point into the
// objects a cluster runs, built from the official Go types (k8s.io/api)
// and never from templated text, so that every field is one the API
// server knows: a Namespace, the hosts' configs, a Deployment and Services
// per placement group, an autoscaling/v2 HorizontalPodAutoscaler per
// [deploy.autoscale] group, Istio's resources for deploy.sidecar =
// "istio", and the load generator as an indexed Job. docs/KUBERNETES.md
// maps every spec key to the field it sets.
package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/svclab/svclab/internal/deploy/program"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Object is what Render returns: a typed API object (a *appsv1.Deployment,
// a *corev1.Service, …) or, for kinds outside k8s.io/api such as Istio's,
// an *unstructured.Unstructured; each carries its apiVersion and kind.
type Object interface {
	k8sruntime.Object
	metav1.Object
}

// Labels and values every object svclab makes carries, so that a run's
// objects, and whatever a killed run left, can be found by selector.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "svclab"
	LabelRun       = "svclab.dev/run"
	// LabelGroup marks a placement group's pods (and selects them).
	LabelGroup = "svclab.dev/group"
	// LabelRole tells hosts from the load generator.
	LabelRole = "svclab.dev/role"
	RoleHost  = "host"
	RoleLoad  = "load"
)

// Names of fixed objects and paths inside the pods.
const (
	// HostsConfigMap holds each group's HostConfig, as <group>.json.
	HostsConfigMap = "svclab-hosts"
	// LoadConfigMap holds the [load] table, as load.toml.
	LoadConfigMap = "svclab-load"
	// LoadJob is the load generator's indexed Job.
	LoadJob = "svclab-load"
	// ConfigDir is where both ConfigMaps are mounted.
	ConfigDir = "/etc/svclab"
	// OutDir is where each load pod writes its results.
	OutDir = "/out"
)

// Ports the hosts listen on inside their pods: the gateway's, and the
// first component listener's, each further exposed component of a group
// taking the next port.
const (
	GatewayPort   = 8080
	ComponentPort = 9000
)

// DefaultImage is the image rendered when neither deploy.kube.image nor
// RenderOptions.Image names one; `svclab kube render` says so. The svclab
// command sets it to the tag `svclab image --tarball` gives its version
// (svclab:VERSION), so that the two agree.
var DefaultImage = "svclab:latest"

// DefaultRunID names the objects of a render made outside a run.
const DefaultRunID = "render"

// RenderOptions are what a render takes beyond the spec.
type RenderOptions struct {
	// RunID labels every object (svclab.dev/run) and names the default
	// namespace, svclab-<RunID>; DefaultRunID when empty.
	RunID string
	// Namespace, when set, is used instead of deploy.kube.namespace or
	// the per-run default.
	Namespace string
	// Image, when set, is used instead of deploy.kube.image.
	Image string
}

// Render returns the objects of one design point: s is its effective
// spec and topo its resolved topology (runtime.Resolve(s)). The order is
// the order to apply them in: the namespace first, then configuration,
// then workloads, the load Job last. Errors name the spec key at fault.
func Render(s *spec.Spec, topo *runtime.Topology, opts RenderOptions) ([]Object, error) {
	r, err := newRenderer(s, topo, opts)
	if err != nil {
		return nil, err
	}
	if cfg := program.Of(topo); cfg != nil {
		return r.renderPrograms(cfg) // the exec app's programs, from their images
	}
	return r.render()
}

// Namespace is the namespace Render puts a design point's objects in.
func Namespace(s *spec.Spec, opts RenderOptions) string {
	if opts.Namespace != "" {
		return opts.Namespace
	}
	if k, _ := KeysOf(s); k.Namespace != "" {
		return k.Namespace
	}
	return "svclab-" + runID(opts)
}

func runID(opts RenderOptions) string {
	if opts.RunID == "" {
		return DefaultRunID
	}
	return opts.RunID
}

// renderer holds one render's inputs and the names it derived from them.
type renderer struct {
	s     *spec.Spec
	keys  Keys // [deploy.kube]
	topo  *runtime.Topology
	run   string
	ns    string
	image string
	// groups are the Kubernetes names of the topology's groups, by index.
	groups []string
	// services names each exposed component's Service.
	services map[string]string
	// ports is each exposed component's port in its pod.
	ports map[string]int32
	// hostOf names each group's [deploy.hosts] table, by index; "" for
	// none (render_hosts.go).
	hostOf []string
}

func newRenderer(s *spec.Spec, topo *runtime.Topology, opts RenderOptions) (*renderer, error) {
	// Every mistake at once: the keys', and what the names made of the
	// topology's and the hosts' become in Kubernetes.
	var errs spec.Errors
	keys, keysErr := KeysOf(s)
	errs.Add(keysErr)
	errs.Add(checkCounts(s))
	r := &renderer{s: s, keys: keys, topo: topo, run: runID(opts), ns: Namespace(s, opts), image: opts.Image,
		services: map[string]string{}, ports: map[string]int32{}}
	if msgs := validation.IsValidLabelValue(r.run); len(msgs) > 0 {
		return nil, fmt.Errorf("run id %q cannot label Kubernetes objects: %s", r.run, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Label(r.ns); len(msgs) > 0 {
		errs.AddLater(s.Errorf("deploy.kube.namespace", "namespace %q is not a Kubernetes namespace name: %s", r.ns, strings.Join(msgs, "; ")))
	}
	if r.image == "" {
		r.image = r.keys.Image
	}
	if r.image == "" {
		r.image = DefaultImage
	}
	seen := map[string]string{}
	for i, g := range topo.Groups {
		name, err := dnsName(g.Name)
		if err != nil {
			errs.Add(s.Errorf("deploy.placement", "group %q: %w", g.Name, err))
		} else if other, ok := seen[name]; ok {
			errs.Add(s.Errorf("deploy.placement", "groups %q and %q both become the Kubernetes name %q; rename a component", other, g.Name, name))
		}
		seen[name] = g.Name
		r.groups = append(r.groups, name)
		for j, c := range topo.Exposed(i) {
			svc, err := dnsName(c)
			if err != nil {
				errs.Add(s.Errorf("app.name", "component %q: %w", c, err))
				continue
			}
			if other, ok := seen[svc]; ok && other != g.Name {
				errs.Add(s.Errorf("deploy.placement", "component %q and group %q both become the Kubernetes name %q", c, other, svc))
			}
			seen[svc] = g.Name
			r.services[c] = svc
			r.ports[c] = ComponentPort + int32(j)
		}
	}
	var err error
	r.hostOf, err = r.hostsOf()
	errs.AddLater(err)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *renderer) render() ([]Object, error) {
	var out []Object
	out = append(out, r.namespace())
	hosts, err := r.hostsConfigMap()
	if err != nil {
		return nil, err
	}
	out = append(out, hosts)
	out = append(out, r.backing()...)
	for i := range r.topo.Groups {
		out = append(out, r.deployment(i))
	}
	out = append(out, r.servicesOf()...)
	for i := range r.topo.Groups {
		if h := r.hpa(i); h != nil {
			out = append(out, h)
		}
	}
	out = append(out, r.istioObjects()...)
	if !r.hasLoad() {
		return out, nil
	}
	cfg, target, err := r.loadConfig()
	if err != nil {
		return nil, err
	}
	lcm, err := r.loadConfigMap(cfg)
	if err != nil {
		return nil, err
	}
	out = append(out, lcm, r.loadJob(cfg, target))
	return out, nil
}

// labels are the labels of every object of the run, with extra ones.
func (r *renderer) labels(extra ...string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy, LabelRun: r.run}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// meta is an object's metadata in the run's namespace.
func (r *renderer) meta(name string, extra ...string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: r.ns, Labels: r.labels(extra...)}
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName turns a group or component name ("hop2+hop3", "product_catalog")
// into a DNS-1123 label ("hop2-hop3", "product-catalog"), the shape of a
// Service's and a Deployment's name and of a label value. A name longer
// than a label's 63 characters (a group of many components) keeps its
// start and ends in a hash of the whole name, so it stays unique.
func dnsName(name string) (string, error) {
	n := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > validation.DNS1123LabelMaxLength {
		sum := sha256.Sum256([]byte(name))
		n = strings.TrimRight(n[:validation.DNS1123LabelMaxLength-9], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
		return "", fmt.Errorf("no Kubernetes name can be made of it (%s)", strings.Join(errs, "; "))
	}
	return n, nil
}
