// Package integration is make rename's and make remove-operator's
// end-to-end test: on a copy of the repository, a newcomer's whole journey
// to a repository of their own, then every check make test makes of it
// that the journey could break. It takes tens of minutes, so it runs with
// the integration tests (make test-integration), not with -short. It has
// no non-test code.
package integration
