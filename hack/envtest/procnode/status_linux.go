//go:build linux

package procnode

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// podWithIPs is the pod as its environment sees it: with the addresses
// this node gave it, which the API server may not have yet.
func (r *podRunner) podWithIPs() *corev1.Pod {
	p := r.pod.DeepCopy()
	if r.sb != nil {
		p.Status.PodIP = r.sb.ip.String()
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	p.Status.HostIP = r.n.ip.String()
	p.Status.HostIPs = []corev1.HostIP{{IP: p.Status.HostIP}}
	return p
}

// status is the pod's status as the kubelet reports it.
func (r *podRunner) status() *corev1.PodStatus {
	st := r.podWithIPs().Status
	if r.sb == nil {
		st.PodIP, st.PodIPs = "", nil
	}
	st.StartTime = r.startTime
	allReady, anyRunning, allStarted := len(r.containers) > 0, false, true
	var statuses []corev1.ContainerStatus
	for _, c := range r.containers {
		cs := corev1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, RestartCount: c.restarts,
			Ready: c.cmd != nil && c.ready && c.startupDone, LastTerminationState: corev1.ContainerState{Terminated: c.last}}
		if c.image != nil {
			cs.ImageID = c.image.id
		}
		if c.spec.ReadinessProbe == nil && c.cmd != nil && c.startupDone {
			cs.Ready = true
		}
		switch {
		case c.cmd != nil:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.started)}
			cs.ContainerID = containerID(c)
			cs.Started = ptr.To(c.startupDone)
			anyRunning = true
		case c.waiting != nil:
			cs.State.Waiting = c.waiting.DeepCopy()
			cs.Started = ptr.To(false)
			allStarted = false
		case c.current != nil:
			cs.State.Terminated = c.current
			cs.Started = ptr.To(false)
		default:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
			cs.Started = ptr.To(false)
			allStarted = false
		}
		allReady = allReady && cs.Ready
		statuses = append(statuses, cs)
	}
	st.ContainerStatuses = statuses
	switch {
	case anyRunning || (allStarted && r.sb != nil && len(r.containers) > 0 && r.restarted()):
		st.Phase = corev1.PodRunning
	default:
		st.Phase = corev1.PodPending
	}
	now := metav1.Now()
	cond := func(t corev1.PodConditionType, ok bool, reason string) {
		status := corev1.ConditionFalse
		if ok {
			status, reason = corev1.ConditionTrue, ""
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				if st.Conditions[i].Status != status {
					st.Conditions[i].LastTransitionTime = now
				}
				st.Conditions[i].Status, st.Conditions[i].Reason = status, reason
				return
			}
		}
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: now})
	}
	cond(corev1.PodReadyToStartContainers, r.sb != nil, "")
	cond(corev1.PodInitialized, true, "")
	cond(corev1.ContainersReady, allReady, "ContainersNotReady")
	cond(corev1.PodReady, allReady && r.gatesPass(&st), "ContainersNotReady")
	return &st
}

// restarted reports whether a container of the pod has run before.
func (r *podRunner) restarted() bool {
	return slices.ContainsFunc(r.containers, func(c *container) bool { return c.instance > 0 })
}

// gatesPass reports whether the pod's readiness gates' conditions hold.
func (r *podRunner) gatesPass(st *corev1.PodStatus) bool {
	for _, g := range r.pod.Spec.ReadinessGates {
		ok := slices.ContainsFunc(st.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == g.ConditionType && c.Status == corev1.ConditionTrue
		})
		if !ok {
			return false
		}
	}
	return true
}

// syncStatus writes the pod's status when it changed.
func (r *podRunner) syncStatus(ctx context.Context) {
	if r.pod == nil {
		return
	}
	st := r.status()
	if r.written != nil && sameStatus(r.written, st) {
		return
	}
	for range 5 {
		p := r.pod.DeepCopy()
		p.Status = *st
		got, err := r.n.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err == nil {
			r.pod, r.written = got, st
			return
		}
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			return
		}
		if apierrors.IsConflict(err) {
			if latest, err := r.n.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err == nil && latest.UID == r.uid {
				r.pod = latest
				st = r.status()
				continue
			}
			return
		}
		r.n.logf("pod %s/%s: could not write its status: %v", p.Namespace, p.Name, err)
		return
	}
}

// sameStatus compares what the runner writes, ignoring condition times.
func sameStatus(a, b *corev1.PodStatus) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	for _, s := range []*corev1.PodStatus{x, y} {
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
			s.Conditions[i].LastProbeTime = metav1.Time{}
		}
	}
	return fmt.Sprint(x.String()) == fmt.Sprint(y.String())
}

// event records an Event about the pod, from the kubelet of this node.
func (r *podRunner) event(eventType, reason, msg string) {
	pod := r.pod
	if pod == nil {
		return
	}
	r.n.event(pod, eventType, reason, msg)
}
