package status_test

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/kooper/status"
)

// A handler sets Ready on every handling, with meta.SetStatusCondition, and
// writes status only when it reports a change. IsTrueFor then tells whether
// Ready describes the current spec.
func ExampleIsTrueFor() {
	var conds []metav1.Condition // foo.Status.Conditions
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ready := func(s metav1.ConditionStatus, reason string, now time.Time) metav1.Condition {
		return metav1.Condition{Type: "Ready", Status: s, Reason: reason, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(now)}
	}

	changed := meta.SetStatusCondition(&conds, ready(metav1.ConditionFalse, "DeploymentProgressing", start))
	fmt.Println("changed:", changed)

	// The same conclusion a minute later: nothing to write.
	changed = meta.SetStatusCondition(&conds, ready(metav1.ConditionFalse, "DeploymentProgressing", start.Add(time.Minute)))
	fmt.Println("changed:", changed)

	// Ready at last: the transition time moves.
	changed = meta.SetStatusCondition(&conds, ready(metav1.ConditionTrue, "DeploymentAvailable", start.Add(2*time.Minute)))
	c := meta.FindStatusCondition(conds, "Ready")
	fmt.Println("changed:", changed, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.TimeOnly))

	// The spec changed (generation 2): Ready is from the old spec.
	fmt.Println(meta.IsStatusConditionTrue(conds, "Ready"), status.IsTrueFor(conds, "Ready", 2))
	// Output:
	// changed: true
	// changed: false
	// changed: true True DeploymentAvailable 03:06:05
	// true false
}
