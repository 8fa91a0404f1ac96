package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsTrueFor reports whether the condition of type condType is True and was
// observed at generation or later: whether it holds for the spec of an
// object whose metadata.generation is generation, not an older one.
func IsTrueFor(conds []metav1.Condition, condType string, generation int64) bool {
	c := meta.FindStatusCondition(conds, condType)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= generation
}
