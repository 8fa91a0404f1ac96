package integration_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

func validSpec() chaosv1beta1.PodTerminatorSpec {
	return chaosv1beta1.PodTerminatorSpec{
		Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Termination: chaosv1beta1.Termination{Percent: 25},
	}
}

// The API server, not Go code, applies the defaults from the PodTerminator
// CRD's schema.
func TestPodTerminatorDefaults(t *testing.T) {
	client := clientset(t)
	ctx := context.Background()
	pts := client.ChaosV1beta1().PodTerminators()

	created, err := pts.Create(ctx, &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "defaults-"},
		Spec:       validSpec(),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("could not create a valid PodTerminator: %v", err)
	}
	t.Cleanup(func() { _ = pts.Delete(context.Background(), created.Name, metav1.DeleteOptions{}) })

	if got := created.Spec.Period; got == nil || got.Duration != time.Minute {
		t.Errorf("period = %v, want the default 60s", got)
	}
	if got := created.Spec.Termination.MinimumInstances; got == nil || *got != 1 {
		t.Errorf("minimumInstances = %v, want the default 1", got)
	}

	// dryRun's Go zero value is its default: check the stored JSON has it.
	raw, err := client.ChaosV1beta1().RESTClient().Get().
		Resource("podterminators").Name(created.Name).DoRaw(ctx)
	if err != nil {
		t.Fatalf("could not get the raw object: %v", err)
	}
	var stored struct {
		Spec map[string]any `json:"spec"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if v, ok := stored.Spec["dryRun"]; !ok || v != false {
		t.Errorf("stored spec.dryRun = %v (present %t), want the default false", v, ok)
	}

	// An explicit minimumInstances 0 is kept, not replaced by the default.
	spec := validSpec()
	spec.Termination.MinimumInstances = ptr.To[int32](0)
	zero, err := pts.Create(ctx, &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "zero-"},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("could not create with minimumInstances 0: %v", err)
	}
	t.Cleanup(func() { _ = pts.Delete(context.Background(), zero.Name, metav1.DeleteOptions{}) })
	if got := zero.Spec.Termination.MinimumInstances; got == nil || *got != 0 {
		t.Errorf("minimumInstances = %v, want the explicit 0", got)
	}
}

// The PodTerminator CRD's schema refuses invalid specs with messages that
// name the field.
func TestPodTerminatorValidation(t *testing.T) {
	client := clientset(t)
	ctx := context.Background()
	pts := client.ChaosV1beta1().PodTerminators()

	tests := map[string]struct {
		mutate func(*chaosv1beta1.PodTerminatorSpec)
		want   []string // substrings of the error message
	}{
		"empty selector": {
			mutate: func(s *chaosv1beta1.PodTerminatorSpec) { s.Selector = metav1.LabelSelector{} },
			want:   []string{"spec.selector", "selector must not be empty", "would match every pod"},
		},
		"selector with empty matchLabels": {
			mutate: func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{}}
			},
			want: []string{"spec.selector", "selector must not be empty"},
		},
		"termination.percent 0": {
			mutate: func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 0 },
			want:   []string{"spec.termination.percent", "greater than or equal to 1"},
		},
		"termination.percent 150": {
			mutate: func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 150 },
			want:   []string{"spec.termination.percent", "less than or equal to 100"},
		},
		"termination.minimumInstances -1": {
			mutate: func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.MinimumInstances = ptr.To[int32](-1) },
			want:   []string{"spec.termination.minimumInstances", "greater than or equal to 0"},
		},
		"period 500ms": {
			mutate: func(s *chaosv1beta1.PodTerminatorSpec) { s.Period = &metav1.Duration{Duration: 500 * time.Millisecond} },
			want:   []string{"spec.period", "period must be at least 1s"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			spec := validSpec()
			tt.mutate(&spec)
			pt, err := pts.Create(ctx, &chaosv1beta1.PodTerminator{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "invalid-"},
				Spec:       spec,
			}, metav1.CreateOptions{})
			if err == nil {
				_ = pts.Delete(context.Background(), pt.Name, metav1.DeleteOptions{})
				t.Fatalf("created %+v, want it refused", spec)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want an Invalid error", err)
			}
			t.Logf("refused as expected: %v", err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// What a user sees of a PodTerminator with kubectl: the field docs (kubectl
// explain, from the CRD schema's descriptions) and the printer columns.
func TestKubectlShowsThePodTerminatorsFieldDocsAndColumns(t *testing.T) {
	client := clientset(t)
	pts := client.ChaosV1beta1().PodTerminators()
	pt, err := pts.Create(context.Background(), &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "columns-"},
		Spec:       validSpec(),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pts.Delete(context.Background(), pt.Name, metav1.DeleteOptions{}) })
	// A Ready condition, as the operator would write it (none runs here).
	pt.Status.Conditions = []metav1.Condition{{Type: chaosv1beta1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: chaosv1beta1.ReasonReconciled, Message: "2 of 8 live pods terminated", LastTransitionTime: metav1.Now()}}
	if _, err := pts.UpdateStatus(context.Background(), pt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectlShows(t, []kubectlCase{
		{[]string{"explain", "podterminators.spec.termination.percent"}, []string{"floor(percent", "minimumInstances"}},
		{[]string{"explain", "pt.spec.selector"}, []string{"an empty selector would match"}},
		{[]string{"get", "pt", pt.Name}, []string{"READY", "PERCENT", "MINIMUM", "DRY-RUN", "LAST TERMINATION", "AGE", pt.Name + "   True   25"}},
		{[]string{"get", "pt", pt.Name, "-o", "wide"}, []string{"READY REASON PERCENT", pt.Name + " True Reconciled 25"}},
	})
}
