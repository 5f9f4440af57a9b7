package kube

import (
	"strconv"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/svclab/svclab/internal/spec"
)

// hpa is group g's [deploy.autoscale] as an autoscaling/v2
// HorizontalPodAutoscaler, nil for a group without one. The targets are
// utilizations of the pod's requests, as the local autoscaler's are of
// the process's limits, which render sets as requests too.
//
// sync_period is kube-controller-manager's flag
// (--horizontal-pod-autoscaler-sync-period), one for the whole cluster, so
// it has no field here; docs/KUBERNETES.md says so. A tolerance other than
// the cluster's default goes in both directions' rules (a beta field,
// behind the HPAConfigurableTolerance feature gate).
func (r *renderer) hpa(g int) Object {
	a := r.topo.Groups[g].Autoscale
	if a == nil {
		return nil
	}
	name := r.groups[g]
	h := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: r.meta(name, LabelGroup, name),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To(int32(a.Min)),
			MaxReplicas:    int32(a.Max),
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{
					StabilizationWindowSeconds: ptr.To(int32(a.ScaleDownWindow.D().Seconds())),
				},
			},
		},
	}
	if a.Tolerance != spec.DefaultTolerance {
		tol := resource.MustParse(strconv.FormatFloat(a.Tolerance, 'f', -1, 64))
		h.Spec.Behavior.ScaleDown.Tolerance = &tol
		h.Spec.Behavior.ScaleUp = &autoscalingv2.HPAScalingRules{Tolerance: ptr.To(tol.DeepCopy())}
	}
	for _, t := range []struct {
		res    corev1.ResourceName
		target int
	}{{corev1.ResourceCPU, a.CPUTarget}, {corev1.ResourceMemory, a.MemoryTarget}} {
		if t.target == 0 {
			continue
		}
		h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   t.res,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(t.target))},
			},
		})
	}
	return h
}
