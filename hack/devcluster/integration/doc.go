// Package integration checks `make devcluster` (hack/devcluster) the way a
// user runs it: the built program starts a local control plane, prints its
// kubeconfig once the CRDs are served, refuses a second start, and stops,
// leaving nothing behind, from another process with make devcluster-stop's
// -stop, after which it starts again. And the dev loop as the README runs
// it: the pod-terminator, with -kubeconfig and -leader-elect=false only,
// serves its admission webhook to that cluster, which refuses an invalid
// PodTerminator with the webhook's message. It has no non-test code; the
// tests run in `make test`.
package integration
