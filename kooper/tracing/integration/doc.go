// Package integration tests kooper/tracing against a real local control
// plane (hack/envtest); it runs in `make test`. It has no non-test
// code.
package integration
