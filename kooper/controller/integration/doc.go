// Package integration holds the controller library's integration tests:
// they run against a real local control plane (hack/envtest) and are
// part of `make test`. It has no non-test code.
package integration
