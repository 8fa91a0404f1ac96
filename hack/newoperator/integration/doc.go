// Package integration is the generator's end-to-end test: it scaffolds two
// operators into a copy of the repository, then builds them and runs their
// unit tests and their integration tests against a local control plane. It
// takes minutes, so it runs with the integration tests (make
// test-integration), not with -short. It has no non-test code.
package integration
