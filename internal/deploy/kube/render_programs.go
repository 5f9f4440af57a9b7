package kube

import (
	"errors"
	"maps"
	"net"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/svclab/svclab/internal/deploy/program"
	"github.com/svclab/svclab/internal/runtime"
)

// renderPrograms renders the exec app's programs (internal/deploy/program):
// a Deployment of each program's image, listening on its port, with its
// env expanded for the cluster ({listen} is 0.0.0.0:port, {addr:<name>}
// the callee's Service), a Service per program, and the load Job against
// the entry's Service. A program with no image cannot run on a cluster:
// that is an error at its key.
func (r *renderer) renderPrograms(cfg *program.Config) ([]Object, error) {
	var errs []error
	addrs := map[string]string{}
	for _, name := range cfg.Names() {
		p := cfg.Programs[name]
		key := "app.components." + name
		if p.Image == "" {
			errs = append(errs, r.s.Errorf(key, "has no image: the kube deployer runs a program from an image (image = \"…\", and port, the port it listens on)"))
			continue
		}
		if p.Port == 0 {
			errs = append(errs, r.s.Errorf(key+".image", "has no port: write port, the port %s listens on", p.Image))
			continue
		}
		svc, err := dnsName(name)
		if err != nil {
			errs = append(errs, r.s.Errorf(key, "%w", err))
			continue
		}
		r.services[name], r.ports[name] = svc, int32(p.Port)
		addrs[name] = net.JoinHostPort(svc+"."+r.ns+".svc", strconv.Itoa(p.Port))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := []Object{r.namespace()}
	for g := range r.topo.Groups {
		out = append(out, r.programDeployment(g, cfg, addrs))
	}
	for g := range r.topo.Groups {
		out = append(out, r.programService(g, cfg))
	}
	if !r.hasLoad() {
		return out, nil
	}
	lc, _, err := r.loadConfig()
	if err != nil {
		return nil, err
	}
	target := "http://" + addrs[cfg.EntryName]
	if cfg.Programs[cfg.EntryName].Protocol == program.ProtoGRPC {
		target = addrs[cfg.EntryName]
	}
	lcm, err := r.loadConfigMap(lc)
	if err != nil {
		return nil, err
	}
	return append(out, lcm, r.loadJob(lc, target)), nil
}

// programDeployment runs group g's one program from its image.
func (r *renderer) programDeployment(g int, cfg *program.Config, addrs map[string]string) Object {
	grp := r.topo.Groups[g]
	name, comp := r.groups[g], grp.Components[0]
	p := cfg.Programs[comp]
	port := strconv.Itoa(p.Port)
	a := program.Addresses{Listen: net.JoinHostPort("0.0.0.0", port), Port: port, Peers: addrs}
	env := []corev1.EnvVar{{Name: runtime.DeploymentEnv, Value: r.run}}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: a.Expand(p.Env[k])})
	}
	c := corev1.Container{
		Name:      "program",
		Image:     p.Image,
		Env:       env,
		Ports:     []corev1.ContainerPort{{Name: portName(p.Protocol, 0), ContainerPort: int32(p.Port), Protocol: corev1.ProtocolTCP}},
		Resources: r.resources(grp),
	}
	c.ReadinessProbe = programProbe(p, 2)
	c.LivenessProbe = programProbe(p, 10)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: r.meta(name, LabelGroup, name, LabelRole, RoleHost),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(grp.Replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: r.run, LabelGroup: name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: r.labels(LabelGroup, name, LabelRole, RoleHost)},
				Spec: corev1.PodSpec{
					Containers:   []corev1.Container{c},
					NodeSelector: r.groupNodeSelector(g),
				},
			},
		},
	}
	return d
}

// programProbe is a program's health check as a kubelet probe.
func programProbe(p *program.Component, period int32) *corev1.Probe {
	pr := &corev1.Probe{PeriodSeconds: period, FailureThreshold: 3, TimeoutSeconds: 1}
	port := int32(p.Port)
	switch h := p.HealthOf(); {
	case h == program.HealthGRPC:
		pr.GRPC = &corev1.GRPCAction{Port: port, Service: ptr.To("")}
	case len(h) > 0 && h[0] == '/':
		pr.HTTPGet = &corev1.HTTPGetAction{Path: h, Port: intstr.FromInt32(port)}
	default:
		pr.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}
	}
	return pr
}

// programService is the ClusterIP Service of group g's program.
func (r *renderer) programService(g int, cfg *program.Config) Object {
	comp := r.topo.Groups[g].Components[0]
	p := cfg.Programs[comp]
	proto := appProtocol(p.Protocol)
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: r.meta(r.services[comp], LabelGroup, r.groups[g]),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelRun: r.run, LabelGroup: r.groups[g]},
			Ports: []corev1.ServicePort{{Name: proto, Port: int32(p.Port), TargetPort: intstr.FromInt32(int32(p.Port)),
				Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To(proto)}},
		},
	}
}
