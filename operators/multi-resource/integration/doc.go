// Package integration holds the multi-resource operator's tests against a
// real local control plane (hack/envtest); they run in `make test`. It
// has no non-test code.
package integration
