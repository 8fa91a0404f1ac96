// Package integration tests the chaos.kooperkit.io CRDs on a real local
// control plane (package devcluster): server-side defaults, the schema's
// validation messages, and server-side apply with the generated apply
// configurations. It runs in `make test` and has no non-test code.
package integration
