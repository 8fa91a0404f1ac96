// Package integration tests the chaos.kooperkit.io CRDs on a real local
// control plane (package devcluster): server-side defaults and the schema's
// validation messages. It runs in `make test` and has no non-test code.
package integration
