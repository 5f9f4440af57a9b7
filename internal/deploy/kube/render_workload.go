package kube

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport/httptransport"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Istio's names for what svclab sets: the pod label that asks for a
// sidecar, and the namespace label of ambient mode (one ztunnel per node,
// deploy.proxy_mode = "node").
const (
	IstioInjectLabel    = "sidecar.istio.io/inject"
	IstioDataplaneLabel = "istio.io/dataplane-mode"
)

func (r *renderer) istio() bool { return r.s.Deploy.Sidecar == spec.SidecarIstio }

func (r *renderer) namespace() Object {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: r.labels()},
	}
	if r.istio() && r.s.Deploy.ProxyMode == spec.ProxyModeNode {
		ns.Labels[IstioDataplaneLabel] = "ambient"
	}
	return ns
}

// hostConfig is group g's HostConfig on the cluster: each exposed
// component listens on its own port of the pod, and each peer is its
// Service's DNS name, so that the cluster (kube-proxy, or Istio's
// sidecars) spreads calls over the peer's replicas.
func (r *renderer) hostConfig(g int) (*hostv1.HostConfig, error) {
	cfg, err := r.topo.ConfigJSON()
	if err != nil {
		return nil, err
	}
	hc := r.topo.HostConfig(g, r.run, cfg)
	hc.Listeners = map[string]*hostv1.Listener{}
	for _, c := range r.topo.Exposed(g) {
		hc.Listeners[c] = &hostv1.Listener{Endpoint: r.endpoint(":" + strconv.Itoa(int(r.ports[c])))}
	}
	if g == r.topo.EntryGroup() {
		hc.Gateway = &hostv1.Listener{Endpoint: &hostv1.Endpoint{
			Transport: runtime.GatewayTransport, Network: "tcp", Addr: ":" + strconv.Itoa(GatewayPort)}}
	}
	hc.Peers = map[string]*hostv1.EndpointSet{}
	for _, c := range r.topo.Peers(g) {
		hc.Peers[c] = &hostv1.EndpointSet{Endpoints: []*hostv1.Endpoint{r.endpoint(r.serviceAddr(c))}}
	}
	return hc, nil
}

// endpoint is a TCP endpoint of the topology's transport: pods reach
// each other over the cluster network only, so deploy.network = "unix"
// does not apply (Notes says so).
func (r *renderer) endpoint(addr string) *hostv1.Endpoint {
	return &hostv1.Endpoint{Transport: r.topo.Transport, Network: "tcp", Addr: addr}
}

// serviceAddr is where component c is reached inside the cluster.
func (r *renderer) serviceAddr(c string) string {
	return fmt.Sprintf("%s.%s.svc:%d", r.services[c], r.ns, r.ports[c])
}

func (r *renderer) hostsConfigMap() (Object, error) {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: r.meta(HostsConfigMap),
		Data:       map[string]string{},
	}
	for i := range r.topo.Groups {
		hc, err := r.hostConfig(i)
		if err != nil {
			return nil, err
		}
		b, err := runtime.EncodeHostConfig(hc)
		if err != nil {
			return nil, err
		}
		cm.Data[r.groups[i]+".json"] = string(b)
	}
	return cm, nil
}

// deployment runs group g: one container of `svclab host` per pod.
func (r *renderer) deployment(g int) Object {
	grp := r.topo.Groups[g]
	name := r.groups[g]
	podLabels := r.labels(LabelGroup, name, LabelRole, RoleHost)
	if r.istio() && r.s.Deploy.ProxyMode == spec.ProxyModeSidecar {
		podLabels[IstioInjectLabel] = "true"
	}
	c := corev1.Container{
		Name:  "host",
		Image: r.image,
		Args: []string{"host", "--config", ConfigDir + "/" + name + ".json",
			"--deployment", r.run, "--group", grp.Name},
		Env:          append([]corev1.EnvVar{{Name: runtime.DeploymentEnv, Value: r.run}}, r.backingEnv()...),
		Ports:        r.containerPorts(g),
		Resources:    r.resources(grp),
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: ConfigDir, ReadOnly: true}},
	}
	c.ReadinessProbe = r.probe(g, 2)
	c.LivenessProbe = r.probe(g, 10)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: r.meta(name, LabelGroup, name, LabelRole, RoleHost),
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: r.run, LabelGroup: name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					Containers:   []corev1.Container{c},
					NodeSelector: r.groupNodeSelector(g),
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: HostsConfigMap}},
					}}},
				},
			},
		},
	}
	// An autoscaled group's replicas belong to its HPA: a count here would
	// fight it at every apply.
	if grp.Autoscale == nil {
		d.Spec.Replicas = ptr.To(int32(grp.Replicas))
	}
	return d
}

// nodeSelector is deploy.kube.node_selector, nil when empty.
func (r *renderer) nodeSelector() map[string]string {
	if len(r.keys.NodeSelector) == 0 {
		return nil
	}
	return maps.Clone(r.keys.NodeSelector)
}

func (r *renderer) containerPorts(g int) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, c := range r.topo.Exposed(g) {
		out = append(out, corev1.ContainerPort{Name: portName(r.topo.Transport, len(out)), ContainerPort: r.ports[c], Protocol: corev1.ProtocolTCP})
	}
	if g == r.topo.EntryGroup() {
		out = append(out, corev1.ContainerPort{Name: "http-gateway", ContainerPort: GatewayPort, Protocol: corev1.ProtocolTCP})
	}
	return out
}

// portName names a port for Istio's protocol selection ("grpc-…",
// "http-…", "tcp-…"); a port name is at most 15 characters.
func portName(transport string, i int) string {
	return appProtocol(transport) + "-" + strconv.Itoa(i)
}

// appProtocol is a transport's protocol as Kubernetes and Istio name it:
// net/rpc and protorpc are plain TCP to them.
func appProtocol(transport string) string {
	switch transport {
	case "grpc":
		return "grpc"
	case "http":
		return "http"
	}
	return "tcp"
}

// resources are [deploy.resources] as both request and limit, so each pod
// gets what a local process's cgroup gives it (Guaranteed QoS). An
// autoscaled group without a CPU limit requests one core, the request the
// local autoscaler measures utilization against.
func (r *renderer) resources(g runtime.Group) corev1.ResourceRequirements {
	list := corev1.ResourceList{}
	cpu := g.Resources.CPU
	if cpu == 0 && g.Autoscale != nil && g.Autoscale.CPUTarget > 0 {
		cpu = g.Autoscale.CPURequest
	}
	if cpu > 0 {
		list[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpu*1000+0.5), resource.DecimalSI)
	}
	if g.Resources.Memory > 0 {
		list[corev1.ResourceMemory] = *resource.NewQuantity(int64(g.Resources.Memory), resource.BinarySI)
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

// probe checks group g's health service every period seconds, on its
// first listener, or on the gateway when nothing else listens (inproc):
// over gRPC (the kubelet's own gRPC health probe) for grpc, as a GET for
// http (httptransport.HealthPath), and as a TCP connect for net/rpc and
// protorpc, whose wire no kubelet probe speaks.
func (r *renderer) probe(g int, period int32) *corev1.Probe {
	p := &corev1.Probe{PeriodSeconds: period, FailureThreshold: 3, TimeoutSeconds: 1}
	transport, port := r.topo.Transport, int32(GatewayPort)
	if exposed := r.topo.Exposed(g); len(exposed) > 0 {
		port = r.ports[exposed[0]]
	} else {
		transport = runtime.GatewayTransport
	}
	switch transport {
	case "grpc":
		p.GRPC = &corev1.GRPCAction{Port: port, Service: ptr.To("")}
	case "http":
		p.HTTPGet = &corev1.HTTPGetAction{Path: HealthPath, Port: intstr.FromInt32(port)}
	default:
		p.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}
	}
	return p
}

// HealthPath is where the http transport answers a probe's GET.
var HealthPath = httptransport.HealthPath

// servicesOf is a ClusterIP Service per exposed component, selecting its
// group's pods; the entry's also carries the HTTP/JSON gateway.
func (r *renderer) servicesOf() []Object {
	entry := r.topo.EntryGroup()
	if _, ok := r.services[r.topo.Entry]; !ok {
		// inproc: the entry has no listener, only the gateway.
		r.services[r.topo.Entry], _ = dnsName(r.topo.Entry)
	}
	var out []Object
	for g := range r.topo.Groups {
		comps := r.topo.Exposed(g)
		if g == entry && !slices.Contains(comps, r.topo.Entry) {
			comps = append(comps, r.topo.Entry)
		}
		for _, c := range comps {
			svc := &corev1.Service{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				ObjectMeta: r.meta(r.services[c], LabelGroup, r.groups[g]),
				Spec: corev1.ServiceSpec{
					Type:     corev1.ServiceTypeClusterIP,
					Selector: map[string]string{LabelRun: r.run, LabelGroup: r.groups[g]},
				},
			}
			if port, ok := r.ports[c]; ok {
				proto := appProtocol(r.topo.Transport)
				svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
					Name: proto, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To(proto)})
			}
			if c == r.topo.Entry {
				svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
					Name: "http-gateway", Port: GatewayPort, TargetPort: intstr.FromInt32(GatewayPort), Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http")})
			}
			out = append(out, svc)
		}
	}
	return out
}
