// Package integration tests the CRDs of the API groups in apis/ on a real
// local control plane (hack/envtest): server-side defaults, the
// schemas' validation messages, server-side apply with the generated apply
// configurations, and what kubectl shows. Each kind has a test file of its
// own, named after it, which goes when its API group goes; main_test.go
// installs every CRD of manifests/crds. It runs in `make test` and has no
// non-test code.
package integration
