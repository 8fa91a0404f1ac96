// Package integration tests kooper/tracing against a real local control
// plane (package devcluster); it runs in `make test`. It has no non-test
// code.
package integration
