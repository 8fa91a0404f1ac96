// Package handler is the multi-resource operator's domain logic: the
// Tenant controller's handler. It runs only in the Tenant controller's
// workers, one worker per Tenant at a time; the controllers of the child
// kinds only queue a changed child's Tenant there (controller.Owns). It
// receives a Tenant and makes the world match it: the namespace and its objects are written
// with server-side apply, so a handling that finds everything in place
// writes nothing, and one that finds a child changed or missing restores it,
// leaving other fields and other objects alone. The namespace is created
// before it is first applied, and never adopted: one that exists is used
// only if its controller is this very Tenant (same UID, not just the same
// name).
//
// There is no delete logic: every child has a controller owner reference to
// the Tenant, and the garbage collector deletes them with it. A finalizer is
// for what the garbage collector cannot see (state outside the cluster); a
// Tenant has none.
package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Metrics counts drift repairs.
type Metrics interface {
	// DriftRepaired counts a child of kind restored after someone else
	// changed or deleted it.
	DriftRepaired(kind string)
}

// Cache reads what the operator's controller holds, with no API call.
type Cache interface {
	// Tenant returns the Tenant named name from the controller's cache.
	Tenant(name string) (metav1.Object, bool)
	// Namespaces returns the metadata of the managed namespaces t
	// controls, from the cache of its Namespace source.
	Namespaces(t *tenancyv1alpha1.Tenant) []*metav1.PartialObjectMetadata
}

// Handler handles Tenants. Use it by pointer: it remembers what it applied.
type Handler struct {
	Kube    kubernetes.Interface
	Tenancy versioned.Interface
	// FieldManager names the operator in the children's managedFields.
	// Required.
	FieldManager string
	// Cache, optional, saves the create call for a namespace the handler
	// made already, and prunes what the drift metric remembers of deleted
	// Tenants.
	Cache Cache
	// Metrics, optional.
	Metrics Metrics
	// Now returns the time. Default time.Now.
	Now func() time.Time

	applied applied
}

// namespaceRetry is how often a Tenant whose namespace is being deleted is
// handled again, until it is gone and can be made anew.
const namespaceRetry = 2 * time.Second

// New returns h as a controller.Handler of Tenants.
func (h *Handler) New() controller.Handler {
	return controller.Typed(h.Handle)
}

// Handle makes t's namespace and children match t, and reports them in
// t's status.
func (h *Handler) Handle(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	// region: deleting
	if t.DeletionTimestamp != nil {
		h.applied.forget(t.UID)
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
		now := appliedChild{uid: obj.GetUID(), rv: obj.GetResourceVersion(), at: h.appliedAt(obj)}
		if h.applied.repaired(t, childKey{kind, namespace, name}, now, h.live) && h.Metrics != nil {
			h.Metrics.DriftRepaired(kind)
		}
		children = append(children, tenancyv1alpha1.Child{Kind: kind, Name: name, Ready: true})
	}
	// endregion: applied

	// region: apply
	opts := metav1.ApplyOptions{FieldManager: h.FieldManager, Force: true}
	want := tenant.Desired(t)

	// The namespace first: nothing else can exist without it.
	nsObj, owned, err := h.namespace(ctx, t, want.Namespace, opts)
	switch {
	case err != nil:
		applied(tenant.KindNamespace, "", ns, nil, err)
		_ = h.setStatus(ctx, t, ns, children, metav1.ConditionFalse, tenancyv1alpha1.ReasonApplyFailed, err.Error())
		return errs[0]
	case !owned && leftBehind(nsObj, t):
		// Never adopted, but not someone else's for good either: it goes
		// away on its own, and is then made for this Tenant.
		msg := fmt.Sprintf("namespace %s is being deleted; it is made for this Tenant once gone", ns)
		if nsObj.DeletionTimestamp == nil {
			msg = fmt.Sprintf("namespace %s still belongs to an earlier Tenant %s (UID %s); it is made for this Tenant once the garbage collector has deleted it", ns, t.Name, metav1.GetControllerOfNoCopy(nsObj).UID)
		}
		if err := h.setStatus(ctx, t, ns, nil, metav1.ConditionFalse, tenancyv1alpha1.ReasonNamespaceDeleting, msg); err != nil {
			return err
		}
		return controller.RequeueAfter(namespaceRetry)
	case !owned:
		msg := fmt.Sprintf("namespace %s exists and does not belong to this Tenant: rename the Tenant or delete the namespace", ns)
		if err := h.setStatus(ctx, t, ns, nil, metav1.ConditionFalse, tenancyv1alpha1.ReasonNamespaceConflict, msg); err != nil {
			return err
		}
		return controller.Terminal(fmt.Errorf("%s", msg))
	case nsObj.DeletionTimestamp != nil:
		// Deleted by hand: wait until it is gone, then make it anew.
		msg := fmt.Sprintf("namespace %s is being deleted; it is made again once gone", ns)
		if err := h.setStatus(ctx, t, ns, nil, metav1.ConditionFalse, tenancyv1alpha1.ReasonNamespaceDeleting, msg); err != nil {
			return err
		}
		return controller.RequeueAfter(namespaceRetry)
	}
	applied(tenant.KindNamespace, "", ns, nsObj, nil)

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

// region: adopt

// namespace makes t's namespace match want and returns it as the API server
// has it, or owned false, leaving it untouched, when it exists and t is not
// its controller: never adopt a namespace this Tenant did not make. Applying
// would add t's owner reference, so deleting t would delete someone else's
// namespace, and bind t's admins in it. That holds for a namespace a
// previous Tenant of the same name made, too (deleted with orphan
// propagation, or not yet collected): ownership is the Tenant's UID, never
// its name.
//
// Create, not apply, makes the namespace: a forced apply would also take
// over one made by someone else meanwhile. A namespace already there is read
// and checked. The Namespace controller's cache saves the create and the
// read when it holds the namespace, controlled by this very Tenant (same
// UID); a cache that lags behind costs a create that fails and a read.
func (h *Handler) namespace(ctx context.Context, t *tenancyv1alpha1.Tenant, want *corev1ac.NamespaceApplyConfiguration, opts metav1.ApplyOptions) (_ *corev1.Namespace, owned bool, _ error) {
	name := *want.Name
	if !h.cachedAndOwned(name, t) {
		obj, err := newNamespace(want)
		if err != nil {
			return nil, false, err
		}
		_, err = h.Kube.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{FieldManager: h.FieldManager})
		switch {
		case err == nil:
			// Ours. The apply below makes the operator the owner of its
			// fields (a create is an update in managedFields).
		case apierrors.IsAlreadyExists(err):
			existing, err := h.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, false, fmt.Errorf("could not read the existing namespace: %w", err)
			}
			if !tenant.OwnedBy(existing, t) {
				return existing, false, nil
			}
			if existing.DeletionTimestamp != nil {
				return existing, true, nil
			}
		default:
			return nil, false, err
		}
	}
	obj, err := h.Kube.CoreV1().Namespaces().Apply(ctx, want, opts)
	if err != nil {
		return nil, true, err
	}
	return obj, true, nil
}

// endregion: adopt

// leftBehind reports whether ns, which t does not own, is on its way out:
// being deleted, or still controlled by an earlier Tenant of t's name (same
// name, another UID), which the garbage collector deletes it with. A
// Tenant deleted with orphan propagation loses that owner reference
// instead, and its namespace then stays someone else's.
func leftBehind(ns *corev1.Namespace, t *tenancyv1alpha1.Tenant) bool {
	if ns.DeletionTimestamp != nil {
		return true
	}
	ref := metav1.GetControllerOfNoCopy(ns)
	return ref != nil && ref.Kind == "Tenant" && ref.Name == t.Name && ref.UID != t.UID &&
		strings.HasPrefix(ref.APIVersion, tenancyv1alpha1.SchemeGroupVersion.Group+"/")
}

// newNamespace returns the namespace want describes, to create.
func newNamespace(want *corev1ac.NamespaceApplyConfiguration) (*corev1.Namespace, error) {
	// An apply configuration is the object's JSON with only the fields set.
	data, err := json.Marshal(want)
	if err != nil {
		return nil, fmt.Errorf("could not encode namespace %s: %w", *want.Name, err)
	}
	var ns corev1.Namespace
	if err := json.Unmarshal(data, &ns); err != nil {
		return nil, fmt.Errorf("could not decode namespace %s: %w", *want.Name, err)
	}
	return &ns, nil
}

// cachedAndOwned reports whether the cache of namespaces holds namespace
// name, controlled by t: a namespace whose controller is not this very
// Tenant is read from the API server and checked there.
func (h *Handler) cachedAndOwned(name string, t *tenancyv1alpha1.Tenant) bool {
	if h.Cache == nil {
		return false
	}
	for _, ns := range h.Cache.Namespaces(t) {
		if ns.Name == name && tenant.OwnedBy(ns, t) {
			return true
		}
	}
	return false
}

// live reports whether the Tenant cache still holds the Tenant name with
// uid; true without a cache.
func (h *Handler) live(name string, uid types.UID) bool {
	if h.Cache == nil {
		return true
	}
	t, ok := h.Cache.Tenant(name)
	return ok && t.GetUID() == uid
}

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
//
// The status is updated, not applied like the children: the operator is
// its only writer, so an apply would merge nothing, and the update's
// resourceVersion check is what keeps a handling of a stale copy from
// overwriting the status of a newer one.
func (h *Handler) setStatus(ctx context.Context, t *tenancyv1alpha1.Tenant, ns string, children []tenancyv1alpha1.Child, st metav1.ConditionStatus, reason, msg string) error {
	s := t.Status.DeepCopy()
	s.ObservedGeneration = t.Generation
	s.Namespace = ns
	s.Children = children
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: tenancyv1alpha1.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: t.Generation,
		LastTransitionTime: metav1.NewTime(h.now()), // used only if the Status changes
	})
	// Semantic: times compare as instants, nil and empty lists are equal.
	// meta.SetStatusCondition kept the condition's LastTransitionTime unless its Status
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
