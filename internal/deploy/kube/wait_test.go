package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodReason: each state a pod can be stuck in is named in the
// cluster's words; a ready pod and a Job's finished pod have no reason.
// (The states come from a real API server and kwok in the e2e tests; this
// table covers the ones kwok cannot make, such as a crashed container.)
func TestPodReason(t *testing.T) {
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [host]"}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, tc := range []struct {
		name string
		st   corev1.PodStatus
		want string
	}{
		{"ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "host", Ready: true, State: running}}}, ""},
		{"job done", corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: []corev1.PodCondition{notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "load", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}}, ""},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available"}}},
			"Unschedulable: 0/2 nodes are available"},
		{"image pull", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "host", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "x"`}}}}},
			`container host: ImagePullBackOff: Back-off pulling image "x"`},
		{"crashed", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "host", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "bad flag"}}}}},
			"container host: Error (exit 2): bad flag"},
		{"never ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "host", State: running}}},
			"container host running but never ready: its readiness probe has not passed"},
		{"creating", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "host", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}},
			"not ready: ContainersNotReady: containers with unready status: [host]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podReason(&corev1.Pod{Status: tc.st}); got != tc.want {
				t.Errorf("podReason = %q, want %q", got, tc.want)
			}
		})
	}
}
