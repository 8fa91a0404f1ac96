package integration_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	chaosv1beta1ac "github.com/kooperkit/kooper/apis/client/applyconfiguration/chaos/v1beta1"
)

// The generated apply configurations speak the PodTerminator CRD's schema: the API server
// takes a spec applied by one manager and a status applied by another, fills
// in the defaults, and refuses a third manager's value over the first's. The
// fake clientset's test (apis/chaos/v1alpha1) checks the same on NewClientset.
func TestPodTerminatorApplyConfigurations(t *testing.T) {
	client := clientset(t)
	ctx := context.Background()
	pts := client.ChaosV1beta1().PodTerminators()

	spec := chaosv1beta1ac.PodTerminator("applied").WithSpec(chaosv1beta1ac.PodTerminatorSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTermination(chaosv1beta1ac.Termination().WithPercent(25)))
	created, err := pts.Apply(ctx, spec, metav1.ApplyOptions{FieldManager: "user"})
	if err != nil {
		t.Fatalf("could not apply the spec: %v", err)
	}
	t.Cleanup(func() { _ = pts.Delete(context.Background(), created.Name, metav1.DeleteOptions{}) })
	if got := created.Spec.Period; got == nil || got.Duration != time.Minute {
		t.Errorf("period = %v, want the default 60s", got)
	}

	status := chaosv1beta1ac.PodTerminator("applied").WithStatus(chaosv1beta1ac.PodTerminatorStatus().
		WithObservedGeneration(created.Generation).
		WithTerminatedTotal(3))
	got, err := pts.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatalf("could not apply the status: %v", err)
	}
	if got.Spec.Termination.Percent != 25 || got.Status.TerminatedTotal != 3 {
		t.Errorf("got termination.percent %d and terminatedTotal %d, want 25 and 3", got.Spec.Termination.Percent, got.Status.TerminatedTotal)
	}

	other := chaosv1beta1ac.PodTerminator("applied").WithSpec(chaosv1beta1ac.PodTerminatorSpec().WithTermination(chaosv1beta1ac.Termination().WithPercent(50)))
	if _, err := pts.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "other"}); !apierrors.IsConflict(err) {
		t.Errorf("got %v, want a conflict: user owns termination.percent", err)
	}
}
