package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Pod is a pod as the domain sees it.
type Pod struct {
	Namespace, Name string
	// UID tells a pod from a later one of the same name.
	UID string
	// Ready is true when the pod's Ready condition is True: it serves.
	Ready bool
	// Deleting is true once the pod has a deletion timestamp.
	Deleting bool
	// Finished is true for pods in phase Succeeded or Failed.
	Finished bool
}

// Live reports whether the pod counts as one of the running instances, and
// so may be chosen: Ready, not being deleted, not finished. A pending,
// starting or failing pod is not an instance: terminating one would prove
// nothing, and counting one would let the minimum hide an outage.
func (p Pod) Live() bool { return p.Ready && !p.Deleting && !p.Finished }

// String returns "namespace/name".
func (p Pod) String() string { return p.Namespace + "/" + p.Name }

// Target says which pods a PodTerminator acts on; Selector is opaque here
// and interpreted by the PodLister.
type Target struct {
	Selector   any
	Namespaces []string // empty: every namespace
	// Exclude lists namespaces whose pods are never terminated, even when
	// listed: kube-system and the operator's own, for example.
	Exclude []string
}

// region: interfaces

// PodLister lists the pods of a target.
type PodLister interface {
	ListPods(ctx context.Context, target Target) ([]Pod, error)
}

// PodDeleter terminates one pod with method m. A pod already gone returns
// ErrPodGone; an eviction a disruption budget refuses returns
// ErrDisruptionBudget. Neither is a failure of the period.
type PodDeleter interface {
	DeletePod(ctx context.Context, pod Pod, m Method) error
}

// ErrPodGone is returned by a PodDeleter for a pod that no longer exists.
var ErrPodGone = errors.New("pod already gone")

// ErrDisruptionBudget is returned by a PodDeleter when a disruption budget
// refuses to let the pod go now.
var ErrDisruptionBudget = errors.New("refused by a disruption budget")

// endregion: interfaces

// Method is how a pod is terminated.
type Method int

// Methods of termination. The zero value is the one that honours budgets.
const (
	// Evict asks for an eviction, which a disruption budget may refuse.
	Evict Method = iota
	// Delete deletes the pod, ignoring every disruption budget.
	Delete
)

// Policy is how many pods one period terminates, and how.
type Policy struct {
	Percent int    // termination.percent, 1-100
	Max     int    // termination.maxPods, >= 1; 0: no cap
	Minimum int    // termination.minimumInstances, >= 0
	DryRun  bool   // choose, but delete nothing
	Method  Method // Evict (default) or Delete
}

// Validate reports a policy that the CRD schema should have refused.
func (p Policy) Validate() error {
	switch {
	case p.Percent < 1 || p.Percent > 100:
		return fmt.Errorf("termination.percent must be between 1 and 100, got %d", p.Percent)
	case p.Max < 0:
		return fmt.Errorf("termination.maxPods must be 1 or more, got %d", p.Max)
	case p.Minimum < 0:
		return fmt.Errorf("termination.minimumInstances must be 0 or more, got %d", p.Minimum)
	case p.Method != Evict && p.Method != Delete:
		return fmt.Errorf("unknown termination method %d", p.Method)
	}
	return nil
}

// region: count

// Count returns how many of live matching pods one period terminates (the
// package's rounding rule): the percent, rounded down, at most Max, and
// never so many that fewer than Minimum are left.
func Count(live int, p Policy) int {
	n := p.Percent * live / 100
	if p.Max > 0 {
		n = min(n, p.Max)
	}
	return max(0, min(n, live-p.Minimum))
}

// endregion: count

// Result is what one period did.
type Result struct {
	Live       int   // live matching pods before terminating
	Terminated []Pod // deleted, or chosen in a dry run
	// Refused were chosen, but a disruption budget refused their eviction:
	// they are left alone until the next period.
	Refused []Pod
	DryRun  bool
}

// Terminator runs periods against a cluster.
type Terminator struct {
	Pods    PodLister
	Deleter PodDeleter
	// Rand chooses the victims. Default: a random source.
	Rand *rand.Rand
}

// Terminate lists the target's pods and terminates Count of the live ones,
// chosen at random (none in a dry run). A pod that vanished meanwhile is
// skipped; a pod a disruption budget protects is skipped and listed in
// Result.Refused, for the next period to try again (never at once: that
// would hammer the API server with refusals); other errors are returned,
// joined, after trying the rest.
func (t *Terminator) Terminate(ctx context.Context, target Target, p Policy) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	pods, err := t.Pods.ListPods(ctx, target)
	if err != nil {
		return Result{}, fmt.Errorf("could not list pods: %w", err)
	}
	live := make([]Pod, 0, len(pods))
	for _, pod := range pods {
		if pod.Live() && !slices.Contains(target.Exclude, pod.Namespace) {
			live = append(live, pod)
		}
	}
	// region: terminate
	res := Result{Live: len(live), DryRun: p.DryRun}
	victims := t.choose(live, Count(len(live), p))
	if p.DryRun {
		res.Terminated = victims
		return res, nil
	}
	var errs []error
	for _, pod := range victims {
		switch err := t.Deleter.DeletePod(ctx, pod, p.Method); {
		case err == nil:
			res.Terminated = append(res.Terminated, pod)
		case errors.Is(err, ErrPodGone):
		case errors.Is(err, ErrDisruptionBudget):
			res.Refused = append(res.Refused, pod)
		default:
			errs = append(errs, fmt.Errorf("could not terminate pod %s: %w", pod, err))
		}
	}
	return res, errors.Join(errs...)
	// endregion: terminate
}

// choose returns n of pods, uniformly at random, without changing pods.
func (t *Terminator) choose(pods []Pod, n int) []Pod {
	r := t.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	idx := r.Perm(len(pods))[:n]
	out := make([]Pod, n)
	for i, j := range idx {
		out[i] = pods[j]
	}
	return out
}

// region: due

// Due reports whether a period has elapsed since last (nil: never ran) at
// now, and if not, how long until it does. The operator stores last in the
// PodTerminator's status, so the decision survives restarts and leader
// changes.
func Due(last *time.Time, period time.Duration, now time.Time) (bool, time.Duration) {
	if last == nil {
		return true, 0
	}
	next := last.Add(period)
	if !now.Before(next) {
		return true, 0
	}
	return false, next.Sub(now)
}

// endregion: due
