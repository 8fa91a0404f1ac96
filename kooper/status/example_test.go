package status_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/kooper/status"
)

// A handler sets Ready on every handling and writes status only when Set
// reports a change.
func ExampleSet() {
	var conds []metav1.Condition // foo.Status.Conditions
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	changed := status.Set(&conds, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeploymentProgressing",
		ObservedGeneration: 1,
	}, start)
	fmt.Println("changed:", changed)

	// The same conclusion a minute later: nothing to write.
	changed = status.Set(&conds, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeploymentProgressing",
		ObservedGeneration: 1,
	}, start.Add(time.Minute))
	fmt.Println("changed:", changed)

	// Ready at last: the transition time moves.
	changed = status.Set(&conds, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "DeploymentAvailable",
		ObservedGeneration: 1,
	}, start.Add(2*time.Minute))
	c, _ := status.Get(conds, "Ready")
	fmt.Println("changed:", changed, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.TimeOnly))

	// The spec changed (generation 2): Ready is from the old spec.
	fmt.Println(status.IsTrue(conds, "Ready"), status.IsTrueFor(conds, "Ready", 2))
	// Output:
	// changed: true
	// changed: false
	// changed: true True DeploymentAvailable 03:06:05
	// true false
}
