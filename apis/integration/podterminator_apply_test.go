package integration_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	chaosv1alpha1ac "github.com/kooperkit/kooper/apis/client/applyconfiguration/chaos/v1alpha1"
)

// The generated apply configurations speak the PodTerminator CRD's schema: the API server
// takes a spec applied by one manager and a status applied by another, fills
// in the defaults, and refuses a third manager's value over the first's. The
// fake clientset's test (apis/chaos/v1alpha1) checks the same on NewClientset.
func TestPodTerminatorApplyConfigurations(t *testing.T) {
	client := clientset(t)
	ctx := context.Background()
	pts := client.ChaosV1alpha1().PodTerminators()

	spec := chaosv1alpha1ac.PodTerminator("applied").WithSpec(chaosv1alpha1ac.PodTerminatorSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTerminationPercent(25))
	created, err := pts.Apply(ctx, spec, metav1.ApplyOptions{FieldManager: "user"})
	if err != nil {
		t.Fatalf("could not apply the spec: %v", err)
	}
	t.Cleanup(func() { _ = pts.Delete(context.Background(), created.Name, metav1.DeleteOptions{}) })
	if got := created.Spec.PeriodSeconds; got == nil || *got != 60 {
		t.Errorf("periodSeconds = %v, want the default 60", got)
	}

	status := chaosv1alpha1ac.PodTerminator("applied").WithStatus(chaosv1alpha1ac.PodTerminatorStatus().
		WithObservedGeneration(created.Generation).
		WithTerminatedTotal(3))
	got, err := pts.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatalf("could not apply the status: %v", err)
	}
	if got.Spec.TerminationPercent != 25 || got.Status.TerminatedTotal != 3 {
		t.Errorf("got terminationPercent %d and terminatedTotal %d, want 25 and 3", got.Spec.TerminationPercent, got.Status.TerminatedTotal)
	}

	other := chaosv1alpha1ac.PodTerminator("applied").WithSpec(chaosv1alpha1ac.PodTerminatorSpec().WithTerminationPercent(50))
	if _, err := pts.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "other"}); !apierrors.IsConflict(err) {
		t.Errorf("got %v, want a conflict: user owns terminationPercent", err)
	}
}
