// Package integration runs examples/tenant-namespace, as a process, against
// a local control plane with kube-controller-manager: a Tenant gets its
// namespace, and a namespace deleted by hand is made again.
package integration
