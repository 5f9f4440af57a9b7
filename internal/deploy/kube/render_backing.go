package kube

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/backing/postgres"
	"github.com/svclab/svclab/internal/runtime"
)

// PostgresImage runs a PostgreSQL backing service on a cluster: the
// official image of the release S1 used. Its entrypoint runs the SQL in
// /docker-entrypoint-initdb.d once, when it makes the database, which a
// fresh pod in a fresh namespace always does: each run starts from the
// app's declared state, as the local deployer's copy of a template does.
const PostgresImage = "postgres:16"

// RoleBacking marks a backing service's pods.
const RoleBacking = "backing"

// backingName is the Kubernetes name of backing service b's objects.
func backingName(b runtime.Backing) string {
	n, err := dnsName(b.Name)
	if err != nil {
		n = "x"
	}
	return "backing-" + n
}

// backing are the objects of the app's backing services: for PostgreSQL a
// ConfigMap with the app's setup SQL, a Deployment of one pod with the
// same server settings as the local pool's, and a Service. It is never
// scaled, as locally.
func (r *renderer) backing() []Object {
	var out []Object
	for _, b := range runtime.BackingsOf(r.topo) {
		if b.Kind != runtime.BackingPostgres {
			continue // backing.Check refuses other kinds before a run
		}
		name := backingName(b)
		labels := []string{LabelGroup, name, LabelRole, RoleBacking}
		out = append(out, &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: r.meta(name+"-init", labels...),
			Data:       map[string]string{"setup.sql": b.Setup},
		})
		c := corev1.Container{
			Name:  "postgres",
			Image: PostgresImage,
			Args: []string{"-c", "max_connections=" + strconv.Itoa(backing.MaxConnections),
				"-c", "shared_buffers=" + backing.SharedBuffers},
			Env: []corev1.EnvVar{
				{Name: "POSTGRES_USER", Value: postgres.Role},
				{Name: "POSTGRES_DB", Value: postgres.Role},
				// Reached only from inside the run's namespace, as the
				// local server only through its private socket directory.
				{Name: "POSTGRES_HOST_AUTH_METHOD", Value: "trust"},
			},
			Ports:        []corev1.ContainerPort{{Name: "tcp-postgres", ContainerPort: postgres.Port, Protocol: corev1.ProtocolTCP}},
			VolumeMounts: []corev1.VolumeMount{{Name: "init", MountPath: "/docker-entrypoint-initdb.d", ReadOnly: true}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-U", postgres.Role, "-h", "127.0.0.1"}}},
				PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 1,
			},
		}
		out = append(out, &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: r.meta(name, labels...),
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(1)),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: r.run, LabelGroup: name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: r.labels(labels...)},
					Spec: corev1.PodSpec{
						Containers:   []corev1.Container{c},
						NodeSelector: r.nodeSelector(),
						Volumes: []corev1.Volume{{Name: "init", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name + "-init"}}}}},
					},
				},
			},
		})
		out = append(out, &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: r.meta(name, labels...),
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Selector: map[string]string{LabelRun: r.run, LabelGroup: name},
				Ports: []corev1.ServicePort{{Name: "tcp-postgres", Port: postgres.Port,
					TargetPort: intstr.FromInt32(postgres.Port), Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("tcp")}},
			},
		})
	}
	return out
}

// backingEnv carries each backing service's address to the hosts, in the
// variable the local deployer sets (runtime.BackingEnv).
func (r *renderer) backingEnv() []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, b := range runtime.BackingsOf(r.topo) {
		if b.Kind != runtime.BackingPostgres {
			continue
		}
		out = append(out, corev1.EnvVar{Name: runtime.BackingEnv(b.Name), Value: fmt.Sprintf(
			"host=%s.%s.svc port=%d user=%s dbname=%s sslmode=disable", backingName(b), r.ns, postgres.Port, postgres.Role, postgres.Role)})
	}
	return out
}
