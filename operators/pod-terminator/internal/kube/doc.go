// Package kube implements the pod-terminator domain's interfaces
// (chaos.PodLister, chaos.PodDeleter) with client-go.
//
// Pods are listed from the API server at each period, not from a cache: the
// count of live pods decides how many may go without breaking the minimum,
// so it must be as fresh as possible. Deletes carry a UID precondition, so a
// pod re-created under the same name since it was listed is never deleted.
package kube
