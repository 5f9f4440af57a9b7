package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// pollEvery is how often a wait reads the cluster's state.
const pollEvery = 500 * time.Millisecond

// runSelector selects the run's objects.
func (dep *Deployment) runSelector() string { return LabelRun + "=" + dep.id }

// waitRollout waits until every Deployment of the run (or those only
// accepts) has all its replicas updated and available, or ctx ends; then it says why not, in the
// cluster's words: each Deployment not rolled out with its pods that are
// not ready and why (a container's waiting reason such as
// ImagePullBackOff, a running container not ready, the scheduler's
// condition), then the namespace's warning events (FailedScheduling,
// Failed, Unhealthy, FailedCreate, ...).
func (dep *Deployment) waitRollout(ctx context.Context, timeout time.Duration, only func(Object) bool) error {
	start := time.Now()
	var last []pendingDeployment // of the last poll that got an answer
	for {
		pending, err := dep.notRolledOut(ctx, only)
		if err == nil && len(pending) == 0 {
			dep.logf("rolled out in %s", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if err == nil {
			last = pending
		}
		select {
		case <-ctx.Done():
			// The reasons are read with a fresh deadline: ctx has none left.
			rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			// A poll that failed as the deadline came says nothing of the
			// server, whatever its words: cut by the deadline, or refused
			// by client-go's rate limiter because it "would exceed context
			// deadline" (a message that once stood for a rollout that was
			// merely slow). So the last answer stands, unless there was
			// none.
			if err != nil && last == nil {
				return apiError(dep.client, "rollout", err)
			}
			return fmt.Errorf("rollout not complete within %s (deploy.start_timeout): %s", timeout, dep.rolloutReasons(rctx, last))
		case <-time.After(pollEvery):
		}
	}
}

// pendingDeployment is a Deployment not rolled out yet.
type pendingDeployment struct {
	name, counts string
	selector     labels.Selector
}

// notRolledOut lists the Deployments (those only accepts, or all) not
// yet rolled out, with their counts.
func (dep *Deployment) notRolledOut(ctx context.Context, only func(Object) bool) ([]pendingDeployment, error) {
	var want []string
	for _, o := range dep.objects {
		if _, ok := o.(*appsv1.Deployment); ok && (only == nil || only(o)) {
			want = append(want, o.GetName())
		}
	}
	var pending []pendingDeployment
	for _, name := range want {
		d, err := dep.client.Typed.AppsV1().Deployments(dep.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		st := d.Status
		if st.ObservedGeneration < d.Generation || st.UpdatedReplicas < replicas || st.AvailableReplicas < replicas || st.Replicas > replicas {
			sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			if err != nil {
				sel = labels.Nothing()
			}
			pending = append(pending, pendingDeployment{
				name:     name,
				counts:   fmt.Sprintf("%d of %d replicas available", st.AvailableReplicas, replicas),
				selector: sel,
			})
		}
	}
	return pending, nil
}

// rolloutReasons says, for each Deployment not rolled out, its counts and
// why each of its pods is not ready, then the namespace's latest warning
// events: "deployment hop1: 0 of 1 replicas available (pod hop1-5d9c-x2k:
// container host: ImagePullBackOff: Back-off pulling image ...); Failed:
// ... (pod hop1-5d9c-x2k)".
func (dep *Deployment) rolloutReasons(ctx context.Context, pending []pendingDeployment) string {
	pods, _ := dep.client.Typed.CoreV1().Pods(dep.ns).List(ctx, metav1.ListOptions{LabelSelector: dep.runSelector()})
	var out []string
	for _, d := range pending {
		line := "deployment " + d.name + ": " + d.counts
		var why []string
		if pods != nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if !d.selector.Matches(labels.Set(p.Labels)) {
					continue
				}
				if r := podReason(p); r != "" {
					why = append(why, "pod "+p.Name+": "+r)
				}
			}
		}
		if len(why) == 0 {
			why = append(why, "no pod")
		}
		out = append(out, line+" ("+strings.Join(why, "; ")+")")
	}
	out = append(out, dep.warnings(ctx, 5)...)
	return strings.Join(out, "; ")
}

// reasons is what the cluster says about the run's pods that are not
// ready, and the namespace's warning events, as ": ..." (or "").
func (dep *Deployment) reasons(ctx context.Context) string {
	var out []string
	pods, err := dep.client.Typed.CoreV1().Pods(dep.ns).List(ctx, metav1.ListOptions{LabelSelector: dep.runSelector()})
	if err == nil {
		for _, p := range pods.Items {
			if r := podReason(&p); r != "" {
				out = append(out, "pod "+p.Name+": "+r)
			}
		}
	}
	out = append(out, dep.warnings(ctx, 5)...)
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, "; ")
}

// podReason is why a pod is not ready, or "" when it is ready or has
// ended well (a Job's).
func podReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason + ": " + c.Message
		}
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("container %s: %s (exit %d): %s", cs.Name, t.Reason, t.ExitCode, t.Message)
		}
	}
	if p.Status.Phase == corev1.PodSucceeded || podReady(p) {
		return ""
	}
	// Running but not ready: the kubelet runs the container and its
	// readiness probe (the health service) has not passed.
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil && !cs.Ready {
			return fmt.Sprintf("container %s running but never ready: its readiness probe has not passed", cs.Name)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return strings.TrimSuffix("not ready: "+c.Reason+": "+c.Message, ": ")
		}
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// warnings are the namespace's latest warning events, "Reason: message
// (object)", at most n, each once.
func (dep *Deployment) warnings(ctx context.Context, n int) []string {
	evs, err := dep.client.Typed.CoreV1().Events(dep.ns).List(ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
	if err != nil {
		return nil
	}
	items := evs.Items
	slices.SortFunc(items, func(a, b corev1.Event) int { return eventTime(b).Compare(eventTime(a)) })
	seen := map[string]bool{}
	var out []string
	for _, e := range items {
		line := fmt.Sprintf("%s: %s (%s %s)", e.Reason, strings.TrimSpace(e.Message), strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name)
		key := e.Reason + e.Message
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, line)
		if len(out) == n {
			break
		}
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
