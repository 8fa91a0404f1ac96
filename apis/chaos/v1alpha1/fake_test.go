package v1alpha1_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned/fake"
)

// The generated fake clientset stores and returns PodTerminators; it does
// not apply the CRD's defaults or validation (only the API server does).
func TestFakeClientset(t *testing.T) {
	ctx := context.Background()
	client := fake.NewSimpleClientset()
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
