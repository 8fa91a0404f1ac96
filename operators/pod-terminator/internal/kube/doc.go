// Package kube implements the pod-terminator domain's interfaces
// (chaos.PodLister, chaos.PodDeleter) with client-go.
//
// Pods are listed from the API server at each period, not from a cache: the
// count of live pods decides how many may go without breaking the minimum,
// so it must be as fresh as possible.
//
// # Bounded listing
//
// A broad selector may match many pods cluster-wide. Pods.ListPods asks only
// for running pods (field selector status.phase=Running: pending and
// finished pods are never Ready), reads them in pages of PageSize (500),
// and turns each page into the small chaos.Pod before reading the next, so
// memory holds one page of full Pods at a time. The pages of one list are
// one consistent snapshot. One period reads at most MaxPages (20) pages:
// beyond that it fails with ErrTooManyPods, reported in the PodTerminator's
// status, asking for a narrower selector or namespaces.
//
// Why full Pods and not metadata-only lists (PartialObjectMetadata, which
// would be smaller)? Whether a pod counts is decided by its Ready condition,
// which lives in the pod's status, and metadata-only lists do not carry
// status. Paging bounds the memory instead.
//
// # Termination
//
// Pods.DeletePod evicts through the Eviction API (policy/v1) by default, so
// PodDisruptionBudgets are honoured: a refusal (429 with cause
// DisruptionBudget) becomes chaos.ErrDisruptionBudget. chaos.Delete deletes
// the pod directly, ignoring budgets. Both carry a UID precondition, so a
// pod re-created under the same name since it was listed is never
// terminated: the conflict, like a pod already gone, is chaos.ErrPodGone.
package kube
