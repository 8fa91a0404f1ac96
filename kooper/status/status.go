package status

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set adds c to conds, or updates the condition of c.Type, and reports
// whether conds changed. c.LastTransitionTime is ignored: it is set to now
// when the condition is added or its Status changes, and kept otherwise.
// Reason, Message and ObservedGeneration are always taken from c. A nil
// conds changes nothing.
func Set(conds *[]metav1.Condition, c metav1.Condition, now time.Time) (changed bool) {
	c.LastTransitionTime = metav1.NewTime(now)
	return meta.SetStatusCondition(conds, c)
}

// Remove removes the condition of type condType from conds and reports
// whether it was there.
func Remove(conds *[]metav1.Condition, condType string) (removed bool) {
	return meta.RemoveStatusCondition(conds, condType)
}

// Get returns a copy of the condition of type condType, and whether it is
// present.
func Get(conds []metav1.Condition, condType string) (metav1.Condition, bool) {
	if c := meta.FindStatusCondition(conds, condType); c != nil {
		return *c, true
	}
	return metav1.Condition{}, false
}

// IsTrue reports whether the condition of type condType is present with
// Status True.
func IsTrue(conds []metav1.Condition, condType string) bool {
	return meta.IsStatusConditionTrue(conds, condType)
}

// IsFalse reports whether the condition of type condType is present with
// Status False. A missing or Unknown condition is not false.
func IsFalse(conds []metav1.Condition, condType string) bool {
	return meta.IsStatusConditionFalse(conds, condType)
}

// IsTrueFor reports whether the condition of type condType is True and was
// observed at generation or later: whether it holds for the spec of an
// object whose metadata.generation is generation, not an older one.
func IsTrueFor(conds []metav1.Condition, condType string, generation int64) bool {
	c, ok := Get(conds, condType)
	return ok && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= generation
}

// Equal reports whether a and b hold the same conditions in the same order,
// ignoring LastTransitionTime: a handler compares the status it computed
// with the one it read to skip a write that would change nothing but times.
func Equal(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
