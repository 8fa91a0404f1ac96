// Package handler is the multi-resource operator's one handler, shared by
// the Tenant controller and the controllers of every child kind (which map a
// child to its Tenant with owner.Middleware). It always receives a Tenant
// and makes the world match it: the namespace and its objects are written
// with server-side apply, so a handling that finds everything in place
// writes nothing, and one that finds a child changed or missing restores it,
// leaving other fields and other objects alone.
//
// There is no delete logic: every child has a controller owner reference to
// the Tenant, and the garbage collector deletes them with it. A finalizer is
// for what the garbage collector cannot see (state outside the cluster); a
// Tenant has none.
package handler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/status"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Metrics counts drift repairs.
type Metrics interface {
	// DriftRepaired counts a child of kind restored after someone else
	// changed or deleted it.
	DriftRepaired(kind string)
}

// Handler handles Tenants.
type Handler struct {
	Kube    kubernetes.Interface
	Tenancy versioned.Interface
	// FieldManager names the operator in the children's managedFields.
	// Required.
	FieldManager string
	// Writes is shared with the child controllers' Children middleware.
	// Required.
	Writes *Writes
	// Metrics, optional.
	Metrics Metrics
	// Now returns the time. Default time.Now.
	Now func() time.Time
}

// namespaceRetry is how often a Tenant whose namespace is being deleted is
// handled again, until it is gone and can be made anew.
const namespaceRetry = 2 * time.Second

// New returns h as a controller.Handler of Tenants.
func (h *Handler) New() controller.Handler {
	return controller.NewTypedHandler(controller.TypedHandlerFunc[*tenancyv1alpha1.Tenant](h.Handle))
}

// Handle makes t's namespace and children match t, and reports them in
// t's status.
func (h *Handler) Handle(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	// region: deleting
	if t.DeletionTimestamp != nil {
		return nil // the garbage collector deletes the children
	}
	// endregion: deleting
	ns := tenant.Namespace(t)
	if t.Spec.Quota == nil || t.Spec.DefaultLimits == nil {
		// The schema defaults both: the CRD in use is not ours.
		msg := "spec.quota or spec.defaultLimits is unset: the CRD schema defaults them; is the CRD from manifests/crds installed?"
		if err := h.setStatus(ctx, t, ns, nil, metav1.ConditionFalse, tenancyv1alpha1.ReasonInvalidSpec, msg); err != nil {
			return err
		}
		return controller.Terminal(fmt.Errorf("%s", msg))
	}

	// region: adopt
	// Never adopt a namespace someone else made: applying would add our
	// owner reference, and deleting the Tenant would delete their namespace.
	// Once we have applied it, it is ours: no need to ask again.
	if !h.Writes.wrote(tenant.KindNamespace, "", ns, "") {
		existing, err := h.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("could not get namespace %s: %w", ns, err)
		case !tenant.OwnedBy(existing, t):
			msg := fmt.Sprintf("namespace %s exists and does not belong to this Tenant: rename the Tenant or delete the namespace", ns)
			if err := h.setStatus(ctx, t, ns, nil, metav1.ConditionFalse, tenancyv1alpha1.ReasonNamespaceConflict, msg); err != nil {
				return err
			}
			return controller.Terminal(fmt.Errorf("%s", msg))
		}
	}
	// endregion: adopt

	trig, triggered := triggerFrom(ctx)
	var (
		children []tenancyv1alpha1.Child
		errs     []error
	)
	// region: applied
	// applied records a child's outcome; obj is what the API server
	// returned.
	applied := func(kind, namespace, name string, obj metav1.Object, err error) {
		if err != nil {
			children = append(children, tenancyv1alpha1.Child{Kind: kind, Name: name, Message: err.Error()})
			errs = append(errs, fmt.Errorf("could not apply %s %s: %w", kind, name, err))
			return
		}
		wr := write{rv: obj.GetResourceVersion(), applied: h.appliedAt(obj), generation: t.Generation}
		if h.Metrics != nil && h.repaired(kind, namespace, name, t, wr, trig, triggered) {
			h.Metrics.DriftRepaired(kind)
		}
		h.Writes.record(kind, namespace, name, wr)
		children = append(children, tenancyv1alpha1.Child{Kind: kind, Name: name, Ready: true})
	}
	// endregion: applied

	// region: apply
	opts := metav1.ApplyOptions{FieldManager: h.FieldManager, Force: true}
	want := tenant.Desired(t)

	// The namespace first: nothing else can exist without it.
	nsObj, err := h.Kube.CoreV1().Namespaces().Apply(ctx, want.Namespace, opts)
	if err == nil && nsObj.DeletionTimestamp != nil {
		// Deleted by hand: wait until it is gone, then make it anew.
		h.Writes.forget(tenant.KindNamespace, "", ns)
		msg := fmt.Sprintf("namespace %s is being deleted; it is made again once gone", ns)
		if err := h.setStatus(ctx, t, ns, nil, metav1.ConditionFalse, tenancyv1alpha1.ReasonNamespaceDeleting, msg); err != nil {
			return err
		}
		return controller.RequeueAfter(namespaceRetry)
	}
	applied(tenant.KindNamespace, "", ns, nsObj, err)
	if err != nil {
		_ = h.setStatus(ctx, t, ns, children, metav1.ConditionFalse, tenancyv1alpha1.ReasonApplyFailed, err.Error())
		return errs[0]
	}

	quota, err := h.Kube.CoreV1().ResourceQuotas(ns).Apply(ctx, want.Quota, opts)
	applied(tenant.KindResourceQuota, ns, tenant.QuotaName, quota, err)
	limits, err := h.Kube.CoreV1().LimitRanges(ns).Apply(ctx, want.LimitRange, opts)
	applied(tenant.KindLimitRange, ns, tenant.LimitRangeName, limits, err)
	binding, err := h.Kube.RbacV1().RoleBindings(ns).Apply(ctx, want.RoleBinding, opts)
	applied(tenant.KindRoleBinding, ns, tenant.RoleBindingName, binding, err)
	// endregion: apply

	// region: networkpolicy
	switch {
	case want.NetworkPolicy != nil:
		np, err := h.Kube.NetworkingV1().NetworkPolicies(ns).Apply(ctx, want.NetworkPolicy, opts)
		applied(tenant.KindNetworkPolicy, ns, tenant.NetworkPolicyName, np, err)
	case listed(t.Status.Children, tenant.KindNetworkPolicy):
		// Isolation was turned off: remove the policy we made (status says
		// we did). Garbage collection only runs when the Tenant goes.
		err := h.Kube.NetworkingV1().NetworkPolicies(ns).Delete(ctx, tenant.NetworkPolicyName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("could not delete NetworkPolicy %s: %w", tenant.NetworkPolicyName, err))
			children = append(children, tenancyv1alpha1.Child{Kind: tenant.KindNetworkPolicy, Name: tenant.NetworkPolicyName, Message: "could not delete: " + err.Error()})
		}
	}
	// endregion: networkpolicy

	// region: status
	st, reason, msg := metav1.ConditionTrue, tenancyv1alpha1.ReasonReconciled, fmt.Sprintf("%d objects in place", len(children))
	if warning := tenant.Unusable(t); warning != "" {
		msg += "; warning: " + warning
	}
	// An Invalid (422) answer is about what the Tenant asks for: no retry
	// can succeed until the spec changes, which queues the Tenant again.
	invalid := len(errs) > 0 && !slices.ContainsFunc(errs, func(err error) bool { return !apierrors.IsInvalid(err) })
	switch {
	case invalid:
		st, reason, msg = metav1.ConditionFalse, tenancyv1alpha1.ReasonInvalidSpec, errs[0].Error()
	case len(errs) > 0:
		st, reason, msg = metav1.ConditionFalse, tenancyv1alpha1.ReasonApplyFailed, errs[0].Error()
	}
	if err := h.setStatus(ctx, t, ns, children, st, reason, msg); err != nil {
		return err
	}
	switch {
	case invalid:
		return controller.Terminal(errs[0])
	case len(errs) > 0:
		return errs[0] // retried with backoff
	}
	return nil
	// endregion: status
}

// region: repaired

// repaired reports whether applying a child just restored it after someone
// else deleted or changed it:
//   - its deletion made this handling happen, or
//   - since the handler last applied it, for the same Tenant generation
//     (not a spec change), its resourceVersion moved and the operator's
//     own fields changed again now (not someone else's fields, like the
//     quota controller's status).
//
// A change is seen whichever handling repairs it first, at the granularity
// of managedFields times (seconds).
func (h *Handler) repaired(kind, namespace, name string, t *tenancyv1alpha1.Tenant, now write, trig trigger, triggered bool) bool {
	if triggered && trig.deleted && trig.kind == kind && trig.namespace == namespace && trig.name == name {
		return true
	}
	before, ok := h.Writes.last(kind, namespace, name)
	return ok && before.generation == t.Generation && before.rv != now.rv && now.applied.After(before.applied)
}

// endregion: repaired

// appliedAt returns when the operator's apply last changed obj, from its
// managedFields.
func (h *Handler) appliedAt(obj metav1.Object) time.Time {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == h.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" && f.Time != nil {
			return f.Time.Time
		}
	}
	return time.Time{}
}

// setStatus writes t's status through the status subresource if it
// changed. A conflict means t is stale and a newer version is queued: that
// handling writes the status.
func (h *Handler) setStatus(ctx context.Context, t *tenancyv1alpha1.Tenant, ns string, children []tenancyv1alpha1.Child, st metav1.ConditionStatus, reason, msg string) error {
	s := t.Status.DeepCopy()
	s.ObservedGeneration = t.Generation
	s.Namespace = ns
	s.Children = children
	status.Set(&s.Conditions, metav1.Condition{
		Type: tenancyv1alpha1.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: t.Generation,
	}, h.now())
	// Semantic: times compare as instants, nil and empty lists are equal.
	// status.Set kept the condition's LastTransitionTime unless its Status
	// changed, so a status that only repeats the last one is not written.
	if equality.Semantic.DeepEqual(&t.Status, s) {
		return nil
	}
	t.Status = *s
	_, err := h.Tenancy.TenancyV1alpha1().Tenants().UpdateStatus(ctx, t, metav1.UpdateOptions{FieldManager: h.FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("could not update the status of Tenant %s: %w", t.Name, err)
	}
	return nil
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func listed(children []tenancyv1alpha1.Child, kind string) bool {
	return slices.ContainsFunc(children, func(c tenancyv1alpha1.Child) bool { return c.Kind == kind })
}
