// Package handler is the pod-terminator's Kooper handler: it reads a
// PodTerminator, keeps its finalizer, decides from status whether a period
// has elapsed, asks the chaos domain to terminate, and records the outcome
// in status, Events and metrics. It is level-based: every decision comes
// from the object's state, so it is correct across restarts and leader
// changes, and it never starts a goroutine per object.
package handler

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/finalizer"
	"github.com/kooperkit/kooper/kooper/status"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
)

// Finalizer is the finalizer the operator keeps on every PodTerminator.
const Finalizer = "chaos.kooperkit.io/pod-terminator"

// Events records Kubernetes Events; kooper/event's Recorder is one.
type Events interface {
	Normal(obj runtime.Object, reason, msgFmt string, args ...any)
	Warning(obj runtime.Object, reason, msgFmt string, args ...any)
}

// Metrics counts terminations.
type Metrics interface {
	AddTerminated(terminator string, dryRun bool, n int)
}

// Handler handles PodTerminators.
type Handler struct {
	Client     versioned.Interface
	Terminator *chaos.Terminator
	Events     Events
	Metrics    Metrics
	// DryRunAll forces a dry run for every PodTerminator (the operator's
	// --dry-run-all flag).
	DryRunAll bool
	// Now returns the time. Default time.Now.
	Now func() time.Time
}

// New returns h as a controller.Handler of PodTerminators.
func (h *Handler) New() controller.Handler {
	return controller.NewTypedHandler(controller.TypedHandlerFunc[*chaosv1alpha1.PodTerminator](h.Handle))
}

// Handle handles the latest state of one PodTerminator.
func (h *Handler) Handle(ctx context.Context, pt *chaosv1alpha1.PodTerminator) error {
	fin := finalizer.Finalizer{Name: Finalizer, Update: h.update}
	// Deleted: drop any pending work and let the object go. Terminations
	// leave no external state to clean up.
	if deleting, err := fin.Finalize(ctx, pt, func(context.Context) error { return nil }); deleting || err != nil {
		return err
	}
	if _, err := fin.Ensure(ctx, pt); err != nil {
		return err
	}

	target, policy, period, err := h.read(pt)
	if err != nil {
		// The schema and webhook should have refused it: say so in status
		// and do not retry until the spec changes.
		h.Events.Warning(pt, chaosv1alpha1.ReasonInvalidSpec, "invalid spec: %v", err)
		serr := h.setStatus(ctx, pt, func(s *chaosv1alpha1.PodTerminatorStatus) {
			h.condition(s, pt, chaosv1alpha1.ConditionInvalid, metav1.ConditionTrue, chaosv1alpha1.ReasonInvalidSpec, err.Error())
			h.condition(s, pt, chaosv1alpha1.ConditionReady, metav1.ConditionFalse, chaosv1alpha1.ReasonInvalidSpec, "the spec is invalid")
		})
		if serr != nil {
			return serr // retry the status write
		}
		return controller.Terminal(fmt.Errorf("invalid spec: %w", err))
	}

	now := h.now()
	var last *time.Time
	if pt.Status.LastTerminationTime != nil {
		last = &pt.Status.LastTerminationTime.Time
	}
	if due, wait := chaos.Due(last, period, now); !due {
		return controller.RequeueAfter(wait)
	}

	res, termErr := h.Terminator.Terminate(ctx, target, policy)
	for _, p := range res.Terminated {
		if res.DryRun {
			h.Events.Normal(pt, "DryRun", "would terminate pod %s (%d live, %d%%, minimum %d)", p, res.Live, policy.Percent, policy.Minimum)
		} else {
			h.Events.Normal(pt, "Terminated", "terminated pod %s (%d live, %d%%, minimum %d)", p, res.Live, policy.Percent, policy.Minimum)
		}
	}
	if h.Metrics != nil {
		h.Metrics.AddTerminated(pt.Name, res.DryRun, len(res.Terminated))
	}
	if termErr != nil {
		h.Events.Warning(pt, chaosv1alpha1.ReasonTerminationFailed, "%v", termErr)
	}
	err = h.setStatus(ctx, pt, func(s *chaosv1alpha1.PodTerminatorStatus) {
		s.LastTerminationTime = &metav1.Time{Time: now}
		if !res.DryRun {
			s.TerminatedTotal += int64(len(res.Terminated))
		}
		for _, p := range res.Terminated {
			s.LastTerminated = append([]chaosv1alpha1.TerminatedPod{{Namespace: p.Namespace, Name: p.Name, Time: metav1.Time{Time: now}}}, s.LastTerminated...)
		}
		if len(s.LastTerminated) > chaosv1alpha1.MaxLastTerminated {
			s.LastTerminated = s.LastTerminated[:chaosv1alpha1.MaxLastTerminated]
		}
		status.Remove(&s.Conditions, chaosv1alpha1.ConditionInvalid)
		if termErr != nil {
			h.condition(s, pt, chaosv1alpha1.ConditionReady, metav1.ConditionFalse, chaosv1alpha1.ReasonTerminationFailed, termErr.Error())
		} else {
			h.condition(s, pt, chaosv1alpha1.ConditionReady, metav1.ConditionTrue, chaosv1alpha1.ReasonReconciled,
				fmt.Sprintf("%d of %d live pods terminated", len(res.Terminated), res.Live))
		}
	})
	if err != nil {
		return err
	}
	if termErr != nil {
		return termErr // retried with backoff
	}
	return controller.RequeueAfter(period)
}

// read turns the spec into the domain's terms.
func (h *Handler) read(pt *chaosv1alpha1.PodTerminator) (chaos.Target, chaos.Policy, time.Duration, error) {
	sel, err := metav1.LabelSelectorAsSelector(&pt.Spec.Selector)
	if err != nil {
		return chaos.Target{}, chaos.Policy{}, 0, fmt.Errorf("selector: %w", err)
	}
	if sel.Empty() {
		return chaos.Target{}, chaos.Policy{}, 0, fmt.Errorf("selector must not be empty: it would match every pod")
	}
	policy := chaos.Policy{
		Percent: int(pt.Spec.TerminationPercent),
		Minimum: int(deref(pt.Spec.MinimumInstances, 1)),
		DryRun:  pt.Spec.DryRun || h.DryRunAll,
	}
	if err := policy.Validate(); err != nil {
		return chaos.Target{}, chaos.Policy{}, 0, err
	}
	period := deref(pt.Spec.PeriodSeconds, 60)
	if period < 1 {
		return chaos.Target{}, chaos.Policy{}, 0, fmt.Errorf("periodSeconds must be 1 or more, got %d", period)
	}
	return chaos.Target{Selector: sel, Namespaces: pt.Spec.Namespaces}, policy, time.Duration(period) * time.Second, nil
}

// setStatus applies change to a copy of the status and writes it through
// the status subresource if anything changed.
func (h *Handler) setStatus(ctx context.Context, pt *chaosv1alpha1.PodTerminator, change func(*chaosv1alpha1.PodTerminatorStatus)) error {
	s := pt.Status.DeepCopy()
	s.ObservedGeneration = pt.Generation
	change(s)
	if equalStatus(&pt.Status, s) {
		return nil
	}
	pt.Status = *s
	updated, err := h.Client.ChaosV1alpha1().PodTerminators().UpdateStatus(ctx, pt, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("could not update the status of %s: %w", pt.Name, err)
	}
	*pt = *updated
	return nil
}

func (h *Handler) condition(s *chaosv1alpha1.PodTerminatorStatus, pt *chaosv1alpha1.PodTerminator, typ string, st metav1.ConditionStatus, reason, msg string) {
	status.Set(&s.Conditions, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: pt.Generation}, h.now())
}

// update persists metadata changes (the finalizer).
func (h *Handler) update(ctx context.Context, obj metav1.Object) error {
	pt := obj.(*chaosv1alpha1.PodTerminator)
	updated, err := h.Client.ChaosV1alpha1().PodTerminators().Update(ctx, pt, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("could not update %s: %w", pt.Name, err)
	}
	*pt = *updated
	return nil
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func equalStatus(a, b *chaosv1alpha1.PodTerminatorStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.TerminatedTotal != b.TerminatedTotal ||
		len(a.Conditions) != len(b.Conditions) || len(a.LastTerminated) != len(b.LastTerminated) {
		return false
	}
	if (a.LastTerminationTime == nil) != (b.LastTerminationTime == nil) ||
		a.LastTerminationTime != nil && !a.LastTerminationTime.Equal(b.LastTerminationTime) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
