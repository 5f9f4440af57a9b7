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

// PostgresImage runs a PostgreSQL backing service on a cluster, unless
// deploy.kube.backing_images.postgres names another: the official image
// of the release S1 used. Its entrypoint runs the SQL in
// /docker-entrypoint-initdb.d once, when it makes the database, which a
// fresh pod in a fresh namespace always does: each run starts from the
// app's declared state, as the local deployer's copy of a template does.
const PostgresImage = "postgres:16"

// officialImages are the images backing services run, by kind, unless
// deploy.kube.backing_images names others.
var officialImages = map[string]string{
	runtime.BackingPostgres: PostgresImage,
	runtime.BackingRedis:    RedisImage,
}

// backingImage is the image a backing service of kind runs.
func backingImage(keys Keys, kind string) string {
	if img := keys.BackingImages[kind]; img != "" {
		return img
	}
	return officialImages[kind]
}

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

// RedisImage runs a Redis backing service on a cluster, unless
// deploy.kube.backing_images.redis names another: the official image. A fresh pod in a fresh namespace starts empty, as the local
// pool's server does after its flush before each run.
const RedisImage = "redis:7"

// RedisPort is the port the Redis image listens on.
const RedisPort = 6379

// backing are the objects of the app's backing services, each a
// Deployment of one pod and a Service, never scaled, as locally: for
// PostgreSQL with a ConfigMap of the app's setup SQL and the local pool's
// server settings, for Redis with the local server's memory limit and no
// persistence. backing.CheckDeclared refuses other kinds before a run.
func (r *renderer) backing() []Object {
	var out []Object
	for _, b := range runtime.BackingsOf(r.topo) {
		switch b.Kind {
		case runtime.BackingPostgres:
			out = append(out, r.postgres(b)...)
		case runtime.BackingRedis:
			out = append(out, r.backingServer(b, r.redisContainer(), nil))
			out = append(out, r.backingService(b, "tcp-redis", RedisPort))
		}
	}
	return out
}

// postgres are a PostgreSQL backing service's objects.
func (r *renderer) postgres(b runtime.Backing) []Object {
	name := backingName(b)
	c := corev1.Container{
		Name:  "postgres",
		Image: backingImage(r.keys, runtime.BackingPostgres),
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
	return []Object{
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: r.meta(name+"-init", r.backingLabels(b)...),
			Data:       map[string]string{"setup.sql": b.Setup},
		},
		r.backingServer(b, c, []corev1.Volume{{Name: "init", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name + "-init"}}}}}),
		r.backingService(b, "tcp-postgres", postgres.Port),
	}
}

// redisContainer runs Redis with the local server's settings, all on the
// command line as locally, so the image's defaults cannot change a run.
func (r *renderer) redisContainer() corev1.Container {
	return corev1.Container{
		Name:  "redis",
		Image: backingImage(r.keys, runtime.BackingRedis),
		Args: []string{"redis-server", "--port", strconv.Itoa(RedisPort),
			"--save", "", "--appendonly", "no",
			"--maxmemory", backing.RedisMaxMemory, "--maxmemory-policy", "noeviction"},
		Ports: []corev1.ContainerPort{{Name: "tcp-redis", ContainerPort: RedisPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			// redis-cli exits 0 on an error reply too (LOADING): only a
			// PONG is ready.
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "redis-cli -p " + strconv.Itoa(RedisPort) + " ping | grep -q PONG"}}},
			PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 1,
		},
	}
}

// backingLabels mark a backing service's objects and select its pod.
func (r *renderer) backingLabels(b runtime.Backing) []string {
	return []string{LabelGroup, backingName(b), LabelRole, RoleBacking}
}

// backingServer is the Deployment of backing service b's one pod.
func (r *renderer) backingServer(b runtime.Backing, c corev1.Container, volumes []corev1.Volume) Object {
	name := backingName(b)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: r.meta(name, r.backingLabels(b)...),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: r.run, LabelGroup: name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: r.labels(r.backingLabels(b)...)},
				Spec: corev1.PodSpec{
					Containers:   []corev1.Container{c},
					NodeSelector: r.nodeSelector(),
					Volumes:      volumes,
				},
			},
		},
	}
}

// backingService is the Service in front of backing service b's pod.
func (r *renderer) backingService(b runtime.Backing, port string, number int32) Object {
	name := backingName(b)
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: r.meta(name, r.backingLabels(b)...),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelRun: r.run, LabelGroup: name},
			Ports: []corev1.ServicePort{{Name: port, Port: number,
				TargetPort: intstr.FromInt32(number), Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("tcp")}},
		},
	}
}

// backingEnv carries each backing service's address to the hosts, in the
// variable the local deployer sets (runtime.BackingEnv), in the form the
// app reads there: a libpq connection string, a redis:// URL.
func (r *renderer) backingEnv() []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, b := range runtime.BackingsOf(r.topo) {
		host := backingName(b) + "." + r.ns + ".svc"
		switch b.Kind {
		case runtime.BackingPostgres:
			out = append(out, corev1.EnvVar{Name: runtime.BackingEnv(b.Name), Value: fmt.Sprintf(
				"host=%s port=%d user=%s dbname=%s sslmode=disable", host, postgres.Port, postgres.Role, postgres.Role)})
		case runtime.BackingRedis:
			out = append(out, corev1.EnvVar{Name: runtime.BackingEnv(b.Name), Value: fmt.Sprintf("redis://%s:%d/0", host, RedisPort)})
		}
	}
	return out
}
