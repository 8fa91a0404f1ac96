// Package status reads the conditions in an object's status: the
// []metav1.Condition list that kubectl, dashboards and other controllers
// read to learn what a controller concluded.
//
// Writing and reading conditions is k8s.io/apimachinery/pkg/api/meta's
// job (SetStatusCondition, RemoveStatusCondition, FindStatusCondition,
// IsStatusConditionTrue); this package adds [IsTrueFor], which also checks
// the generation a condition was observed at.
//
// # Writing conditions
//
// A handler computes every condition from the object it was given and
// writes status only when something changed, so that an unchanged object
// does not cause an update and another handling:
//
//	changed := meta.SetStatusCondition(&foo.Status.Conditions, metav1.Condition{
//		Type:               "Ready",
//		Status:             metav1.ConditionTrue,
//		Reason:             "DeploymentAvailable",
//		Message:            "all replicas are available",
//		ObservedGeneration: foo.Generation,
//		LastTransitionTime: metav1.NewTime(now),
//	})
//	if changed {
//		_, err = client.FooV1().Foos(ns).UpdateStatus(ctx, foo, metav1.UpdateOptions{})
//	}
//
// SetStatusCondition uses LastTransitionTime only when it adds the
// condition or changes its Status, and time.Now() when it is zero: pass the
// handler's clock, so that tests are deterministic.
//
// # ObservedGeneration
//
// metadata.generation grows with every change to spec. Set each condition's
// ObservedGeneration to the generation of the object the handler read: a
// reader then knows whether a condition describes the current spec or an
// older one still being acted on. "Ready" with an old ObservedGeneration
// means "was ready, the new spec is not handled yet"; [IsTrueFor] checks
// both at once.
//
// # Consequences
//
//   - LastTransitionTime changes only when Status changes: a new Reason or
//     Message alone keeps it, so it answers "since when is this True".
//   - The API server validates metav1.Condition on CRDs that embed it:
//     Type and Reason are required, Reason is CamelCase
//     ("DeploymentAvailable"), Status is True, False or Unknown. A condition
//     breaking these makes the whole status update fail.
//   - A missing condition is neither true nor false:
//     meta.IsStatusConditionTrue and IsStatusConditionFalse both report
//     false for it, as for Unknown, and so does IsTrueFor.
package status
