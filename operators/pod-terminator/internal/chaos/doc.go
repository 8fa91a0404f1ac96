// Package chaos is the pod-terminator's domain logic, in plain Go: which
// pods to terminate in one period, and when the next period is due. It
// declares the small interfaces it needs (PodLister, PodDeleter) and knows
// nothing of Kubernetes clients, so it is tested with fakes.
//
// # The rounding rule
//
// Of the N live pods matching a PodTerminator (Ready, not being deleted, not
// finished), one period terminates
//
//	min(floor(percent × N / 100), max(N − minimum, 0))
//
// pods, chosen at random: floor never rounds a small share up to a whole pod,
// and the cap keeps at least minimum matching pods alive. With 10 pods, 30%
// and a minimum of 8: floor(3) = 3, capped at 10 − 8 = 2, so 2 pods go.
//
// Only live pods are counted and only live pods are chosen: a pending or
// failing pod is neither an instance that keeps the minimum nor a victim.
//
// # Eviction and disruption budgets
//
// A Policy's Method is Evict by default: the PodDeleter asks for an
// eviction, which a disruption budget may refuse (ErrDisruptionBudget). A
// refused pod is not retried within the period: Result.Refused names it and
// the next period chooses again. Delete ignores budgets.
package chaos
