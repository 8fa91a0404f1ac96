package v1alpha1_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1alpha1ac "github.com/kooperkit/kooper/apis/client/applyconfiguration/chaos/v1alpha1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned/fake"
)

// The generated fake clientset stores and returns PodTerminators; it does
// not apply the CRD's defaults or validation (only the API server does).
func TestFakeClientset(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	pts := client.ChaosV1alpha1().PodTerminators()

	want := &chaosv1alpha1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: chaosv1alpha1.PodTerminatorSpec{
			Selector:           metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			TerminationPercent: 25,
		},
	}
	if _, err := pts.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatalf("could not create: %v", err)
	}
	got, err := pts.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("could not get: %v", err)
	}
	if got.Spec.TerminationPercent != 25 || got.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("got spec %+v, want %+v", got.Spec, want.Spec)
	}
	if got.Spec.PeriodSeconds != nil {
		t.Errorf("fake applied a default periodSeconds %d; only the API server should", *got.Spec.PeriodSeconds)
	}

	list, err := pts.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("could not list: %v", err)
	}
	if len(list.Items) != 1 {
		t.Errorf("listed %d PodTerminators, want 1", len(list.Items))
	}
}

// NewClientset tracks managed fields, as the API server does: each field
// manager owns what it applied, a status apply leaves the spec alone, and
// applying a value over another manager's is a conflict. This needs the
// OpenAPI schema generate.sh gives applyconfiguration-gen; without it, every
// write to the fake fails with "no type found matching".
func TestFakeClientsetAppliesWithFieldManagement(t *testing.T) {
	ctx := context.Background()
	pts := fake.NewClientset().ChaosV1alpha1().PodTerminators()

	spec := chaosv1alpha1ac.PodTerminator("web").WithSpec(chaosv1alpha1ac.PodTerminatorSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTerminationPercent(25))
	if _, err := pts.Apply(ctx, spec, metav1.ApplyOptions{FieldManager: "user"}); err != nil {
		t.Fatalf("could not apply the spec: %v", err)
	}
	status := chaosv1alpha1ac.PodTerminator("web").WithStatus(chaosv1alpha1ac.PodTerminatorStatus().
		WithObservedGeneration(1).
		WithTerminatedTotal(3))
	got, err := pts.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatalf("could not apply the status: %v", err)
	}
	if got.Spec.TerminationPercent != 25 || got.Status.TerminatedTotal != 3 {
		t.Errorf("got terminationPercent %d and terminatedTotal %d, want 25 and 3", got.Spec.TerminationPercent, got.Status.TerminatedTotal)
	}
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, f := range got.ManagedFields {
		managers[f.Manager] = f.Operation
	}
	if managers["user"] != metav1.ManagedFieldsOperationApply || managers["operator"] != metav1.ManagedFieldsOperationApply {
		t.Errorf("got managers %v, want user and operator, both Apply", managers)
	}

	other := chaosv1alpha1ac.PodTerminator("web").WithSpec(chaosv1alpha1ac.PodTerminatorSpec().WithTerminationPercent(50))
	if _, err := pts.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "other"}); !apierrors.IsConflict(err) {
		t.Errorf("got %v, want a conflict: user owns terminationPercent", err)
	}
}

// DeepCopy is generated: a copy shares nothing with the original.
func TestDeepCopy(t *testing.T) {
	orig := &chaosv1alpha1.PodTerminator{
		Spec: chaosv1alpha1.PodTerminatorSpec{
			Selector:   metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Namespaces: []string{"shop"},
		},
	}
	cp := orig.DeepCopy()
	cp.Spec.Selector.MatchLabels["app"] = "db"
	cp.Spec.Namespaces[0] = "other"
	if orig.Spec.Selector.MatchLabels["app"] != "web" || orig.Spec.Namespaces[0] != "shop" {
		t.Errorf("DeepCopy shares memory with the original: %+v", orig.Spec)
	}
}
