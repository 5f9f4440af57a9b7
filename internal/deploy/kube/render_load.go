package kube

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/spec"
)

// LoadFile is the [load] table's file in LoadConfigMap.
const LoadFile = "load.toml"

// hasLoad reports whether the spec has a [load] table: one without (a
// spec for `svclab up`) renders the system under test alone.
func (r *renderer) hasLoad() bool {
	_, ok := r.s.Lookup("load")
	return ok
}

// loadConfig is the [load] table the generator pods run: the spec's own,
// with the app's default requests added when it names none, as the
// runner adds them locally (experiment.TargetFor). Over grpc they are
// calls by method name on the entry's listener, so the transport under
// test carries the client's calls; otherwise they are posted to the
// entry's HTTP/JSON gateway.
func (r *renderer) loadConfig() (load.Config, string, error) {
	var cfg load.Config
	if err := r.s.Decode("load", &cfg); err != nil {
		return cfg, "", err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, "", r.s.Locate("load", err)
	}
	gateway := fmt.Sprintf("http://%s.%s.svc:%d", r.services[r.topo.Entry], r.ns, GatewayPort)
	if cfg.Request != nil || cfg.Flow != nil {
		cfg.Target = ""
		return cfg, gateway, nil
	}
	reqs := r.topo.Requests()
	if len(reqs) == 0 {
		return cfg, "", r.s.Errorf("load", "app %s has no default request; give one in [load.request]", r.topo.App.Name)
	}
	target := gateway
	steps := make([]load.Request, 0, len(reqs))
	if r.topo.Transport == "grpc" {
		cfg.Protocol = "grpc"
		target = r.serviceAddr(r.topo.Entry)
		for _, q := range reqs {
			steps = append(steps, load.Request{Name: q.Name, Method: strings.TrimPrefix(q.Method, "/"), Body: string(q.JSON()), Weight: 1})
		}
	} else {
		cfg.Protocol = "http"
		for _, q := range reqs {
			steps = append(steps, load.Request{
				Name: q.Name, Method: http.MethodPost, Path: q.Method, Body: string(q.JSON()),
				Headers:      map[string]string{"Content-Type": "application/json"},
				ExpectStatus: http.StatusOK, Weight: 1,
			})
		}
	}
	cfg.Target = ""
	if len(steps) == 1 {
		cfg.Request = &steps[0]
	} else {
		cfg.Flow = &load.Flow{Order: "weighted", Steps: steps}
	}
	return cfg, target, nil
}

func (r *renderer) loadConfigMap(cfg load.Config) (Object, error) {
	b, err := toml.Marshal(map[string]any{"load": cfg})
	if err != nil {
		return nil, fmt.Errorf("encode [load] for the generator pods: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: r.meta(LoadConfigMap),
		Data:       map[string]string{LoadFile: string(b)},
	}, nil
}

// loadJob is the load generator: an indexed Job whose deploy.kube.generators
// pods start together, each running shard INDEX/N of the load (its share
// of the rate or of the users) and writing its results to OutDir.
func (r *renderer) loadJob(cfg load.Config, target string) Object {
	n := int32(r.keys.Generators)
	labels := r.labels(LabelRole, RoleLoad)
	if r.istio() && r.s.Deploy.ProxyMode == spec.ProxyModeSidecar {
		// Under STRICT mTLS only a meshed client reaches the entry, as
		// S2's client did; Istio runs the proxy as a native sidecar
		// (an init container that restarts), so the Job still completes.
		labels[IstioInjectLabel] = "true"
	}
	c := corev1.Container{
		Name:  "load",
		Image: r.image,
		Args: []string{"load", "-f", ConfigDir + "/" + LoadFile,
			"--shard", "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(int(n)),
			"--dir", OutDir, "--allow-remote", "--quiet", target},
		// The pod's log carries its results to svclab (results.go).
		Env: []corev1.EnvVar{{Name: ResultsEnv, Value: "1"}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: ConfigDir, ReadOnly: true},
			{Name: "out", MountPath: OutDir},
		},
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: r.meta(LoadJob, LabelRole, RoleLoad),
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To(n),
			Parallelism:    ptr.To(n),
			// A retried shard would send its share twice and late: a run
			// with a failed generator fails.
			BackoffLimit:          ptr.To(int32(0)),
			ActiveDeadlineSeconds: ptr.To(r.loadDeadline(cfg)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{c},
					NodeSelector:  r.nodeSelector(),
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: LoadConfigMap}}}},
						{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// loadDeadline bounds the Job: twice the warm-up and measurement, plus
// deploy.start_timeout for the pods to be scheduled and pull the image.
func (r *renderer) loadDeadline(cfg load.Config) int64 {
	d := 2*(cfg.Warmup.D()+cfg.MeasureDuration()) + r.topo.StartTimeout
	return int64(math.Ceil(d.Seconds()))
}
