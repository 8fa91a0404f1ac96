// Package status keeps the conditions in an object's status: the
// []metav1.Condition list that kubectl, dashboards and other controllers
// read to learn what a controller concluded.
//
// It is a thin layer over k8s.io/apimachinery/pkg/api/meta with two
// differences: [Set] takes the current time, so tests are deterministic and
// LastTransitionTime is only ever the time the status last changed; and
// [Get] returns a copy, so reading a condition cannot change the object.
//
// # Writing conditions
//
// A handler computes every condition from the object it was given and
// writes status only when something changed, so that an unchanged object
// does not cause an update and another handling:
//
//	changed := status.Set(&foo.Status.Conditions, metav1.Condition{
//		Type:               "Ready",
//		Status:             metav1.ConditionTrue,
//		Reason:             "DeploymentAvailable",
//		Message:            "all replicas are available",
//		ObservedGeneration: foo.Generation,
//	}, time.Now())
//	if changed {
//		_, err = client.FooV1().Foos(ns).UpdateStatus(ctx, foo, metav1.UpdateOptions{})
//	}
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
//   - A missing condition is neither true nor false: [IsTrue] and [IsFalse]
//     both report false for it, as for Unknown.
package status
