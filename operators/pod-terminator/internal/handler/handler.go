// Package handler is the pod-terminator's Kooper handler: it reads a
// PodTerminator, keeps its finalizer, decides from status whether a period
// has elapsed, asks the chaos domain to terminate, and records the outcome
// in status, Events and metrics. It is level-based: every decision comes
// from the object's state, so it is correct across restarts and leader
// changes, and it never starts a goroutine per object.
package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/finalizer"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

// Finalizer is the finalizer the operator keeps on every PodTerminator.
const Finalizer = "chaos.kooperkit.io/pod-terminator"

// stopGrace is how long a claimed period may go on once the handling's
// context is done, to delete and record consistently.
const stopGrace = time.Second

// Reasons of the Events recorded for each period that chose pods.
const (
	ReasonTerminated = "Terminated"
	ReasonDryRun     = "DryRun"
)

// Events records Kubernetes Events; kooper/event's Recorder is one.
type Events interface {
	Normal(obj runtime.Object, reason, msgFmt string, args ...any)
	Warning(obj runtime.Object, reason, msgFmt string, args ...any)
}

// Metrics counts terminations.
type Metrics interface {
	AddTerminated(terminator string, dryRun bool, n int)
	// Forget drops every series of a PodTerminator that is gone, so that
	// deleted objects do not keep series for ever.
	Forget(terminator string)
}

// Handler handles PodTerminators.
type Handler struct {
	Client     versioned.Interface
	Terminator *chaos.Terminator
	Events     Events
	Metrics    Metrics
	// Rules are the checks of internal/validation; a spec failing them is
	// marked Invalid and not acted on. Their protected namespaces are never
	// searched for pods.
	Rules validation.Rules
	// DryRunAll forces a dry run for every PodTerminator (the operator's
	// --dry-run-all flag).
	DryRunAll bool
	// Now returns the time. Default time.Now.
	Now func() time.Time
}

// New returns h as a controller.Handler of PodTerminators.
func (h *Handler) New() controller.Handler {
	return controller.Typed(h.Handle)
}

// Handle handles the latest state of one PodTerminator.
func (h *Handler) Handle(ctx context.Context, pt *chaosv1beta1.PodTerminator) error {
	// region: finalizer
	fin := finalizer.Finalizer{Name: Finalizer, Update: h.update}
	// Deleted: drop any pending work and let the object go. Terminations
	// leave no external state to clean up. A conflict means our copy is
	// stale and a newer version is queued: handle that one instead.
	if deleting, err := fin.Finalize(ctx, pt, func(context.Context) error { return nil }); deleting || err != nil {
		if deleting && err == nil && h.Metrics != nil {
			h.Metrics.Forget(pt.Name) // no period runs for it again
		}
		return ignoreConflict(err)
	}
	if _, err := fin.Ensure(ctx, pt); err != nil {
		return ignoreConflict(err)
	}
	// endregion: finalizer

	// region: invalid
	target, policy, period, err := h.read(pt)
	if err != nil {
		// The schema and webhook should have refused it: say so in status
		// and do not retry until the spec changes.
		h.Events.Warning(pt, chaosv1beta1.ReasonInvalidSpec, "invalid spec: %v", err)
		serr := h.setStatus(ctx, pt, func(s *chaosv1beta1.PodTerminatorStatus) {
			h.condition(s, pt, chaosv1beta1.ConditionInvalid, metav1.ConditionTrue, chaosv1beta1.ReasonInvalidSpec, err.Error())
			h.condition(s, pt, chaosv1beta1.ConditionReady, metav1.ConditionFalse, chaosv1beta1.ReasonInvalidSpec, "the spec is invalid")
		})
		if serr != nil {
			return serr // retry the status write
		}
		return controller.Terminal(fmt.Errorf("invalid spec: %w", err))
	}
	// endregion: invalid

	// region: due
	now := h.now()
	var last *time.Time
	if pt.Status.LastTerminationTime != nil {
		last = &pt.Status.LastTerminationTime.Time
	}
	if due, wait := chaos.Due(last, period, now); !due {
		return controller.RequeueAfter(wait)
	}
	// endregion: due

	// region: claim
	// Claim the period before acting, with the resourceVersion we read. The
	// copy we hold may be stale (the cache has not yet seen our own last
	// write, or another replica acted during a leader change): then the
	// write conflicts and nothing is terminated twice. A newer version is
	// on its way to the queue, and is handled next.
	err = h.setStatus(ctx, pt, func(s *chaosv1beta1.PodTerminatorStatus) {
		s.LastTerminationTime = &metav1.Time{Time: now}
	})
	if apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// endregion: claim

	// region: grace
	// The period is claimed: finish it even if the operator is stopping, so
	// that every pod deleted is also recorded (a delete sent just before a
	// cancellation may still happen). Once ctx is done, the rest of the
	// period gets stopGrace, well within the controller's shutdown timeout.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stopGraceTimer := context.AfterFunc(ctx, func() { time.AfterFunc(stopGrace, cancel) })
	defer stopGraceTimer()
	// endregion: grace

	// region: events
	res, termErr := h.Terminator.Terminate(pctx, target, policy)
	// One Event per period, naming every pod: kubectl describe shows the
	// history, and the operator's event recorder allows one per second per
	// object without folding them together.
	if n := len(res.Terminated); n > 0 {
		reason, verb := ReasonTerminated, "terminated"
		if res.DryRun {
			reason, verb = ReasonDryRun, "would terminate"
		}
		rule := fmt.Sprintf("%d%%", policy.Percent)
		if policy.Max > 0 {
			rule += fmt.Sprintf(", at most %d", policy.Max)
		}
		h.Events.Normal(pt, reason, "%s %d of %d live pods (%s, minimum %d): %s",
			verb, n, res.Live, rule, policy.Minimum, podList(res.Terminated, len(res.Terminated)))
	}
	refused := ""
	if n := len(res.Refused); n > 0 {
		refused = fmt.Sprintf("a disruption budget refused evicting %d pods, tried again next period: %s", n, podList(res.Refused, maxNamed))
		h.Events.Warning(pt, chaosv1beta1.ReasonDisruptionBudget, "%s", refused)
	}
	if h.Metrics != nil {
		h.Metrics.AddTerminated(pt.Name, res.DryRun, len(res.Terminated))
	}
	if termErr != nil {
		h.Events.Warning(pt, chaosv1beta1.ReasonTerminationFailed, "%v", termErr)
	}
	// endregion: events

	// Record what was done. Someone may write the object meanwhile (a spec
	// change): then re-read it and record on the fresh copy, so no
	// termination goes uncounted.
	record := func(s *chaosv1beta1.PodTerminatorStatus) {
		if !res.DryRun {
			s.TerminatedTotal += int64(len(res.Terminated))
		}
		for _, p := range res.Terminated {
			s.LastTerminated = append([]chaosv1beta1.TerminatedPod{{Namespace: p.Namespace, Name: p.Name, Time: metav1.Time{Time: now}}}, s.LastTerminated...)
		}
		if len(s.LastTerminated) > chaosv1beta1.MaxLastTerminated {
			s.LastTerminated = s.LastTerminated[:chaosv1beta1.MaxLastTerminated]
		}
		meta.RemoveStatusCondition(&s.Conditions, chaosv1beta1.ConditionInvalid)
		switch {
		case termErr != nil:
			h.condition(s, pt, chaosv1beta1.ConditionReady, metav1.ConditionFalse, chaosv1beta1.ReasonTerminationFailed, termErr.Error())
		case refused != "":
			h.condition(s, pt, chaosv1beta1.ConditionReady, metav1.ConditionFalse, chaosv1beta1.ReasonDisruptionBudget,
				fmt.Sprintf("%d of %d live pods terminated; %s", len(res.Terminated), res.Live, refused))
		default:
			h.condition(s, pt, chaosv1beta1.ConditionReady, metav1.ConditionTrue, chaosv1beta1.ReasonReconciled,
				fmt.Sprintf("%d of %d live pods terminated", len(res.Terminated), res.Live))
		}
	}
	// region: record
	first := true
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := h.Client.ChaosV1beta1().PodTerminators().Get(pctx, pt.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			*pt = *fresh
		}
		first = false
		return h.setStatus(pctx, pt, record)
	})
	if err != nil {
		return err
	}
	// A failed termination is in status and an Event; the next period
	// tries again.
	return controller.RequeueAfter(period)
	// endregion: record
}

// read checks the spec and turns it into the domain's terms.
func (h *Handler) read(pt *chaosv1beta1.PodTerminator) (chaos.Target, chaos.Policy, time.Duration, error) {
	if _, err := validation.Validate(&pt.Spec, h.Rules); err != nil {
		return chaos.Target{}, chaos.Policy{}, 0, err
	}
	// Validate checked the selector parses and the schema's defaults are set.
	sel, err := metav1.LabelSelectorAsSelector(&pt.Spec.Selector)
	if err != nil {
		return chaos.Target{}, chaos.Policy{}, 0, fmt.Errorf("spec.selector: %w", err)
	}
	target := chaos.Target{Selector: sel, Namespaces: pt.Spec.Namespaces, Exclude: h.Rules.Protected()}
	t := pt.Spec.Termination
	policy := chaos.Policy{
		Percent: int(t.Percent),
		Minimum: int(*t.MinimumInstances),
		DryRun:  pt.Spec.DryRun || h.DryRunAll,
	}
	if t.MaxPods != nil {
		policy.Max = int(*t.MaxPods)
	}
	switch t.Method {
	case chaosv1beta1.TerminationMethodEviction, "": // "": written before the field existed
		policy.Method = chaos.Evict
	case chaosv1beta1.TerminationMethodDelete:
		policy.Method = chaos.Delete
	default:
		return chaos.Target{}, chaos.Policy{}, 0, fmt.Errorf("spec.termination.method: unknown method %q", t.Method)
	}
	return target, policy, pt.Spec.Period.Duration, nil
}

// region: setstatus

// setStatus applies change to a copy of the status and writes it through
// the status subresource if anything changed.
func (h *Handler) setStatus(ctx context.Context, pt *chaosv1beta1.PodTerminator, change func(*chaosv1beta1.PodTerminatorStatus)) error {
	s := pt.Status.DeepCopy()
	s.ObservedGeneration = pt.Generation
	change(s)
	// Semantic: times compare as instants, nil and empty lists are equal.
	// meta.SetStatusCondition kept each unchanged condition's LastTransitionTime, so a
	// status that only repeats the last one is not written again.
	if equality.Semantic.DeepEqual(&pt.Status, s) {
		return nil
	}
	pt.Status = *s
	updated, err := h.Client.ChaosV1beta1().PodTerminators().UpdateStatus(ctx, pt, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("could not update the status of %s: %w", pt.Name, err)
	}
	*pt = *updated
	return nil
}

// endregion: setstatus

func (h *Handler) condition(s *chaosv1beta1.PodTerminatorStatus, pt *chaosv1beta1.PodTerminator, typ string, st metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: pt.Generation,
		LastTransitionTime: metav1.NewTime(h.now()), // used only if the Status changes
	})
}

// update persists metadata changes (the finalizer).
// region: update

// update persists pt's finalizers and nothing else: a merge patch of
// metadata.finalizers at pt's resourceVersion, which conflicts, as an
// Update would, when pt is stale. An Update would send the whole spec back
// as the typed object writes it ("60s" becomes "1m0s"), bumping its
// generation and taking its fields from whoever applied them.
func (h *Handler) update(ctx context.Context, obj metav1.Object) error {
	pt := obj.(*chaosv1beta1.PodTerminator)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": pt.Finalizers, "resourceVersion": pt.ResourceVersion,
	}})
	if err != nil {
		return fmt.Errorf("could not encode the finalizers of %s: %w", pt.Name, err)
	}
	updated, err := h.Client.ChaosV1beta1().PodTerminators().Patch(ctx, pt.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("could not update %s: %w", pt.Name, err)
	}
	*pt = *updated
	return nil
}

// endregion: update

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// maxNamed is how many pods a refusal names in status and its Event; the
// rest are counted.
const maxNamed = 5

// podList names the first limit pods, "ns/a, ns/b", then counts the rest.
func podList(pods []chaos.Pod, limit int) string {
	named := pods[:min(len(pods), limit)]
	names := make([]string, 0, len(named)+1)
	for _, p := range named {
		names = append(names, p.String())
	}
	if rest := len(pods) - len(named); rest > 0 {
		names = append(names, fmt.Sprintf("and %d more", rest))
	}
	return strings.Join(names, ", ")
}
