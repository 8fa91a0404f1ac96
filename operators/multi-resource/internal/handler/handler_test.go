package handler_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned/fake"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/handler"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

func acme(isolated bool) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid", Generation: 1},
		Spec: tenancyv1alpha1.TenantSpec{
			Admins:           []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}},
			Quota:            &tenancyv1alpha1.Quota{CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), Pods: 20},
			DefaultLimits:    &tenancyv1alpha1.ContainerDefaults{CPU: resource.MustParse("500m"), Memory: resource.MustParse("256Mi")},
			NetworkIsolation: isolated,
		},
	}
}

type drift struct{ kinds []string }

func (d *drift) DriftRepaired(kind string) { d.kinds = append(d.kinds, kind) }

func newHandler(t *testing.T, tn *tenancyv1alpha1.Tenant, objs ...runtime.Object) (*handler.Handler, *kubefake.Clientset, *fake.Clientset) {
	t.Helper()
	kube := kubefake.NewClientset(objs...)
	tenancy := fake.NewClientset(tn)
	return &handler.Handler{Kube: kube, Tenancy: tenancy, FieldManager: "test", Metrics: &drift{}}, kube, tenancy
}

func stored(t *testing.T, c *fake.Clientset) *tenancyv1alpha1.Tenant {
	t.Helper()
	tn, err := c.TenancyV1alpha1().Tenants().Get(context.Background(), "acme", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestATenantGetsEveryChildAndAReadyStatus(t *testing.T) {
	ctx := context.Background()
	h, kube, tenancy := newHandler(t, acme(true))
	if err := h.Handle(ctx, acme(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "tenant-acme", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := kube.NetworkingV1().NetworkPolicies("tenant-acme").Get(ctx, tenant.NetworkPolicyName, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	got := stored(t, tenancy)
	if !meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.ConditionReady) || len(got.Status.Children) != 5 || got.Status.Namespace != "tenant-acme" {
		t.Errorf("got status %+v, want Ready with 5 children in tenant-acme", got.Status)
	}

	// Isolation turned off: the policy listed in status is deleted.
	off := acme(false)
	off.Status = got.Status
	if err := h.Handle(ctx, off); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.NetworkingV1().NetworkPolicies("tenant-acme").Get(ctx, tenant.NetworkPolicyName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("got %v, want the NetworkPolicy deleted", err)
	}
	if got := stored(t, tenancy); len(got.Status.Children) != 4 {
		t.Errorf("got children %+v, want 4", got.Status.Children)
	}
}

// The ResourceQuota also caps the number of objects of each kind a
// tenant's admins can create: spec.quota.objects, or its default.
func TestTheQuotaCapsObjectCounts(t *testing.T) {
	tests := []struct {
		name    string
		objects int32
		want    int64
	}{
		{"unset: the default", 0, tenant.DefaultObjects},
		{"set", 30, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			tn := acme(true)
			tn.Spec.Quota.Objects = tt.objects
			h, kube, _ := newHandler(t, tn)
			if err := h.Handle(ctx, tn); err != nil {
				t.Fatal(err)
			}
			q, err := kube.CoreV1().ResourceQuotas("tenant-acme").Get(ctx, tenant.QuotaName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []corev1.ResourceName{"count/rolebindings.rbac.authorization.k8s.io", "count/networkpolicies.networking.k8s.io", "count/configmaps", "count/secrets"} {
				if got := q.Spec.Hard.Name(r, resource.DecimalSI); got.Value() != tt.want {
					t.Errorf("got %s %s, want %d", r, got.String(), tt.want)
				}
			}
			if q.Spec.Hard.Pods().Value() != 20 {
				t.Errorf("got pods %s, want 20", q.Spec.Hard.Pods().String())
			}
		})
	}
}

func TestANamespaceSomeoneElseMadeIsNeverAdopted(t *testing.T) {
	ctx := context.Background()
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-acme", Labels: map[string]string{"team": "other"}}}
	h, kube, tenancy := newHandler(t, acme(false), theirs)
	err := h.Handle(ctx, acme(false))
	if !controller.IsTerminal(err) {
		t.Fatalf("got %v, want a terminal error", err)
	}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, "tenant-acme", metav1.GetOptions{})
	if err != nil || len(ns.OwnerReferences) != 0 {
		t.Errorf("got namespace %+v (%v), want it untouched", ns, err)
	}
	c := meta.FindStatusCondition(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ReasonNamespaceConflict {
		t.Errorf("got Ready %+v, want False with NamespaceConflict", c)
	}
}

func TestUnsetDefaultsAreReportedNotApplied(t *testing.T) {
	tn := acme(false)
	tn.Spec.Quota = nil
	h, kube, _ := newHandler(t, tn)
	if err := h.Handle(context.Background(), tn); !controller.IsTerminal(err) {
		t.Fatalf("got %v, want a terminal error", err)
	}
	if list, _ := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("got namespaces %v, want none", list.Items)
	}
}

// An Invalid (422) answer to an apply cannot succeed on a retry: the Tenant
// is marked InvalidSpec and the error is terminal, after one attempt.
func TestAnInvalidApplyIsTerminal(t *testing.T) {
	ctx := context.Background()
	h, kube, tenancy := newHandler(t, acme(false))
	attempts := 0
	kube.PrependReactor("patch", "resourcequotas", func(k8stesting.Action) (bool, runtime.Object, error) {
		attempts++
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ResourceQuota"}, tenant.QuotaName,
			field.ErrorList{field.Invalid(field.NewPath("spec", "hard", "cpu"), "-3", "must be greater than or equal to 0")})
	})
	err := h.Handle(ctx, acme(false))
	if !controller.IsTerminal(err) {
		t.Errorf("got %v, want a terminal error", err)
	}
	c := meta.FindStatusCondition(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, "must be greater than or equal to 0") {
		t.Errorf("got Ready %+v, want False, InvalidSpec, with the API server's message", c)
	}
	if attempts != 1 {
		t.Errorf("got %d apply attempts, want 1", attempts)
	}
}

// Another failure is retried: it may be transient.
func TestAnotherApplyFailureIsRetried(t *testing.T) {
	h, kube, _ := newHandler(t, acme(false))
	kube.PrependReactor("patch", "limitranges", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "limitranges"}, tenant.LimitRangeName, errors.New("no RBAC"))
	})
	if err := h.Handle(context.Background(), acme(false)); err == nil || controller.IsTerminal(err) {
		t.Errorf("got %v, want an error that is retried", err)
	}
}

// Default limits above the quota leave no room for a pod that sets none:
// the Tenant is Ready (everything is in place) and says so.
func TestDefaultLimitsAboveTheQuotaAreReported(t *testing.T) {
	tn := acme(false)
	tn.Spec.DefaultLimits.CPU = resource.MustParse("3")
	h, _, tenancy := newHandler(t, tn)
	if err := h.Handle(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "warning: defaultLimits.cpu 3 exceeds quota.cpu 2") {
		t.Errorf("got Ready %+v, want True with a warning naming both", c)
	}
}

// A Tenant deleted and made again under the same name is a new Tenant (a
// new UID): it never takes over the namespace of the old one, even though
// this handler applied it and still remembers that write. Otherwise its
// admins would be bound as admin in a namespace holding someone else's
// workloads and secrets.
func TestANewTenantOfTheSameNameNeverTakesOverTheNamespace(t *testing.T) {
	tests := []struct {
		name string
		// gone turns the old Tenant's namespace into what the new Tenant
		// finds.
		gone func(ns *corev1.Namespace)
		// wait: the namespace goes away on its own, so the Tenant waits
		// for it (NamespaceDeleting, requeued) instead of giving up
		// (NamespaceConflict, terminal). Either way nothing is adopted.
		wait bool
	}{
		{"deleted with orphan propagation: no owner left", func(ns *corev1.Namespace) { ns.OwnerReferences = nil }, false},
		{"deleted, not yet collected: still owned by the old Tenant", func(*corev1.Namespace) {}, true},
		{"someone else's Tenant kind owns it", func(ns *corev1.Namespace) { ns.OwnerReferences[0].APIVersion = "example.com/v1" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h, kube, tenancy := newHandler(t, acme(false))
			if err := h.Handle(ctx, acme(false)); err != nil {
				t.Fatal(err)
			}
			ns, err := kube.CoreV1().Namespaces().Get(ctx, "tenant-acme", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tt.gone(ns)
			if _, err := kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The new Tenant: same name, new UID, other admins.
			again := acme(false)
			again.UID = "acme-uid-2"
			again.Spec.Admins = []tenancyv1alpha1.Admin{{Kind: "User", Name: "mallory"}}
			if err := tenancy.TenancyV1alpha1().Tenants().Delete(ctx, "acme", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := tenancy.TenancyV1alpha1().Tenants().Create(ctx, again, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			kube.ClearActions()

			err = h.Handle(ctx, again)
			wantReason := tenancyv1alpha1.ReasonNamespaceConflict
			if tt.wait {
				wantReason = tenancyv1alpha1.ReasonNamespaceDeleting
				if after, ok := controller.RequeueDelay(err); !ok || after <= 0 {
					t.Errorf("got %v, want a requeue after a while", err)
				}
			} else if !controller.IsTerminal(err) {
				t.Errorf("got %v, want a terminal error", err)
			}
			c := meta.FindStatusCondition(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != wantReason {
				t.Errorf("got Ready %+v, want False with %s", c, wantReason)
			}
			for _, a := range kube.Actions() {
				if a.GetVerb() == "patch" || a.GetVerb() == "update" {
					t.Errorf("got %s %s, want nothing written", a.GetVerb(), a.GetResource().Resource)
				}
			}
			binding, err := kube.RbacV1().RoleBindings("tenant-acme").Get(ctx, tenant.RoleBindingName, metav1.GetOptions{})
			if err != nil || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "alice" {
				t.Errorf("got binding %+v (%v), want alice's, untouched", binding, err)
			}
			if got, _ := kube.CoreV1().Namespaces().Get(ctx, "tenant-acme", metav1.GetOptions{}); tenant.OwnedBy(got, again) {
				t.Errorf("got namespace owners %+v, want the new Tenant not among them", got.OwnerReferences)
			}
		})
	}
}

// cached is a handler.Cache over maps.
type cached struct {
	tenants    map[string]metav1.Object
	namespaces map[string]*metav1.PartialObjectMetadata
}

func (c cached) Tenant(name string) (metav1.Object, bool) {
	o, ok := c.tenants[name]
	return o, ok
}

// Namespaces returns every namespace cached, whichever Tenant controls
// it: the handler checks.
func (c cached) Namespaces(*tenancyv1alpha1.Tenant) []*metav1.PartialObjectMetadata {
	var out []*metav1.PartialObjectMetadata
	for _, ns := range c.namespaces {
		out = append(out, ns)
	}
	return out
}

// The namespace is made with a create, which fails if it exists: a forced
// apply would take over one made between a check and the apply. Once the
// cache of namespaces holds it, controlled by this very Tenant
// (same UID), the handler applies it directly; otherwise it reads it once
// to check it.
func TestTheNamespaceCalls(t *testing.T) {
	ctx := context.Background()
	h, kube, _ := newHandler(t, acme(false))
	handle := func(h *handler.Handler) []string {
		t.Helper()
		kube.ClearActions()
		if err := h.Handle(ctx, acme(false)); err != nil {
			t.Fatal(err)
		}
		var verbs []string
		for _, a := range kube.Actions() {
			if a.GetResource().Resource == "namespaces" {
				verbs = append(verbs, a.GetVerb())
			}
		}
		return verbs
	}
	with := func(c handler.Cache) *handler.Handler {
		return &handler.Handler{Kube: kube, Tenancy: h.Tenancy, FieldManager: "test", Cache: c}
	}
	ours := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "tenant-acme", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Tenant", Name: "acme", UID: "acme-uid", Controller: ptr.To(true)},
	}}}
	older := ours.DeepCopy()
	older.OwnerReferences[0].UID = "old-uid"
	// The cache holds whatever is labelled managed-by: only a controller
	// reference to a Tenant, with this Tenant's UID, is trusted.
	otherKind := ours.DeepCopy()
	otherKind.OwnerReferences[0].Kind = "Team"
	otherGroup := ours.DeepCopy()
	otherGroup.OwnerReferences[0].APIVersion = "example.com/v1"
	for _, step := range []struct {
		name string
		h    *handler.Handler
		want []string
	}{
		{"a new Tenant: create, then apply", h, []string{"create", "patch"}},
		{"in the cache, ours: apply only", with(cached{namespaces: map[string]*metav1.PartialObjectMetadata{"tenant-acme": ours}}), []string{"patch"}},
		{"not in the cache yet: create, read, apply", with(cached{}), []string{"create", "get", "patch"}},
		{"in the cache, an older Tenant's: create, read, apply", with(cached{namespaces: map[string]*metav1.PartialObjectMetadata{"tenant-acme": older}}), []string{"create", "get", "patch"}},
		{"in the cache, controlled by another kind with the Tenant's UID: create, read, apply", with(cached{namespaces: map[string]*metav1.PartialObjectMetadata{"tenant-acme": otherKind}}), []string{"create", "get", "patch"}},
		{"in the cache, controlled by a Tenant of another group: create, read, apply", with(cached{namespaces: map[string]*metav1.PartialObjectMetadata{"tenant-acme": otherGroup}}), []string{"create", "get", "patch"}},
	} {
		if got := handle(step.h); !slices.Equal(got, step.want) {
			t.Errorf("%s: got namespace calls %v, want %v", step.name, got, step.want)
		}
	}
}

// A namespace of the Tenant being deleted is not written: the handler waits
// for it to go.
func TestATerminatingNamespaceIsWaitedFor(t *testing.T) {
	ctx := context.Background()
	yes := true
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "tenant-acme", DeletionTimestamp: &metav1.Time{Time: time.Now()}, Finalizers: []string{"kubernetes"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Tenant", Name: "acme", UID: "acme-uid", Controller: &yes}},
	}}
	h, kube, tenancy := newHandler(t, acme(false), terminating)
	err := h.Handle(ctx, acme(false))
	if after, ok := controller.RequeueDelay(err); !ok || after <= 0 {
		t.Errorf("got %v, want a requeue after a while", err)
	}
	c := meta.FindStatusCondition(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
	if c == nil || c.Reason != tenancyv1alpha1.ReasonNamespaceDeleting {
		t.Errorf("got Ready %+v, want NamespaceDeleting", c)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("got patch %s, want nothing applied", a.GetResource().Resource)
		}
	}
}
