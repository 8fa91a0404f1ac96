package status_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/kooper/status"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ready(s metav1.ConditionStatus, reason string, generation int64) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: s, Reason: reason, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(t0)}
}

func TestIsTrueFor(t *testing.T) {
	progressing := metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Rolling", ObservedGeneration: 2}
	tests := []struct {
		name       string
		conds      []metav1.Condition
		generation int64
		want       bool
	}{
		{name: "a missing condition is not true", conds: []metav1.Condition{progressing}, generation: 2},
		{name: "an unknown condition is not true", conds: []metav1.Condition{ready(metav1.ConditionUnknown, "Starting", 2)}, generation: 2},
		{name: "a false condition is not true", conds: []metav1.Condition{ready(metav1.ConditionFalse, "Unavailable", 2)}, generation: 2},
		{name: "a true condition of the current generation is true for it", conds: []metav1.Condition{progressing, ready(metav1.ConditionTrue, "Available", 2)}, generation: 2, want: true},
		{name: "a true condition of a later generation is true for an older one", conds: []metav1.Condition{ready(metav1.ConditionTrue, "Available", 3)}, generation: 2, want: true},
		{name: "a true condition of an older generation is not true for the current one", conds: []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1)}, generation: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.IsTrueFor(tt.conds, "Ready", tt.generation); got != tt.want {
				t.Errorf("got IsTrueFor %v, want %v", got, tt.want)
			}
		})
	}
}
