package webhook

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

// moreDestructive returns how an update from old to spec makes a
// PodTerminator more destructive, as a list of changes to name in a
// refusal, or nil when it does not: then the writer needs no right to
// delete pods, as the operator deletes no more than old already let it,
// which was checked when old was written. spec has passed
// validation.Validate.
//
// Which pods: any change of the selector or the namespaces counts, even one
// that narrows them. Proving a selector narrower than another is subtle
// (matchExpressions, operators, keys the pods lack) and a wrong proof is a
// confused deputy again: not worth the few checks it would save.
// How many, how often and how: a dry run turned off, a higher percentage, a
// cap on pods raised or removed, a lower minimum, a shorter period, or
// Delete (which ignores disruption budgets) instead of Eviction. A change
// that is more destructive in one way and less in another counts as more.
func (v validator) moreDestructive(old, spec *chaosv1beta1.PodTerminatorSpec) []string {
	// The handler does not act on a spec that fails these checks (it marks
	// it Invalid): any valid spec does more.
	if _, err := validation.Validate(old, v.rules); err != nil {
		return []string{"the old spec is invalid, so terminates nothing"}
	}
	var more []string
	add := func(yes bool, change string) {
		if yes {
			more = append(more, change)
		}
	}
	add(!equality.Semantic.DeepEqual(old.Selector, spec.Selector), "spec.selector changed")
	add(!slices.Equal(old.Namespaces, spec.Namespaces), "spec.namespaces changed")
	add(old.DryRun && !spec.DryRun, "spec.dryRun turned off")
	was, is := &old.Termination, &spec.Termination
	add(is.Percent > was.Percent, "spec.termination.percent raised")
	add(was.MaxPods != nil && (is.MaxPods == nil || *is.MaxPods > *was.MaxPods), "spec.termination.maxPods raised or removed")
	// Validate refused unset pointers: the schema's defaults are set.
	add(*is.MinimumInstances < *was.MinimumInstances, "spec.termination.minimumInstances lowered")
	add(spec.Period.Duration < old.Period.Duration, "spec.period shortened")
	add(harshness(is.Method) > harshness(was.Method), "spec.termination.method changed to "+string(is.Method))
	return more
}

// harshness ranks termination methods as the handler reads them: a method
// it does not know terminates nothing (Invalid), Eviction honours
// disruption budgets, Delete does not.
func harshness(m chaosv1beta1.TerminationMethod) int {
	switch m {
	case chaosv1beta1.TerminationMethodDelete:
		return 2
	case chaosv1beta1.TerminationMethodEviction, "": // "": written before the field existed
		return 1
	default:
		return 0
	}
}
