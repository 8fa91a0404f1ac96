package handler_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned/fake"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/status"
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
	tenancy := fake.NewSimpleClientset(tn)
	return &handler.Handler{Kube: kube, Tenancy: tenancy, FieldManager: "test", Writes: &handler.Writes{}, Metrics: &drift{}}, kube, tenancy
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
	if !status.IsTrue(got.Status.Conditions, tenancyv1alpha1.ConditionReady) || len(got.Status.Children) != 5 || got.Status.Namespace != "tenant-acme" {
		t.Errorf("got status %+v, want Ready with 5 children in tenant-acme", got.Status)
	}
	if h.Writes.Len() != 5 {
		t.Errorf("got %d writes remembered, want 5", h.Writes.Len())
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
	c, ok := status.Get(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
	if !ok || c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ReasonNamespaceConflict {
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

// next records what the Children middleware passes on.
type next struct{ calls []runtime.Object }

func (n *next) Handle(_ context.Context, obj runtime.Object) error {
	n.calls = append(n.calls, obj)
	return nil
}

func TestChildrenDropsEchoesOfOurOwnWrites(t *testing.T) {
	ctx := context.Background()
	h, kube, _ := newHandler(t, acme(false))
	if err := h.Handle(ctx, acme(false)); err != nil {
		t.Fatal(err)
	}
	quota, err := kube.CoreV1().ResourceQuotas("tenant-acme").Get(ctx, tenant.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := &next{}
	mw := handler.Children(tenant.KindResourceQuota, h.Writes)(n)

	if err := mw.Handle(ctx, quota); err != nil || len(n.calls) != 0 {
		t.Fatalf("got %v and %d calls for our own write, want it dropped", err, len(n.calls))
	}
	edited := quota.DeepCopy()
	edited.ResourceVersion = "someone-else"
	if err := mw.Handle(ctx, edited); err != nil || len(n.calls) != 1 {
		t.Fatalf("got %v and %d calls for someone else's change, want it passed on", err, len(n.calls))
	}
	if err := mw.Handle(ctx, &controller.Deleted{Object: quota}); err != nil || len(n.calls) != 2 {
		t.Fatalf("got %v and %d calls for a deletion, want it passed on", err, len(n.calls))
	}
	if h.Writes.Len() != 3 {
		t.Errorf("got %d writes remembered after the quota's deletion, want 3", h.Writes.Len())
	}
	if err := mw.Handle(ctx, quota); err != nil || len(n.calls) != 3 {
		t.Errorf("got %v and %d calls for a forgotten child, want it passed on", err, len(n.calls))
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
	c, _ := status.Get(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
	if c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, "must be greater than or equal to 0") {
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
	c, _ := status.Get(stored(t, tenancy).Status.Conditions, tenancyv1alpha1.ConditionReady)
	if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "warning: defaultLimits.cpu 3 exceeds quota.cpu 2") {
		t.Errorf("got Ready %+v, want True with a warning naming both", c)
	}
}
