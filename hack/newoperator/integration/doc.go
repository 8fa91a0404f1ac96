// Package integration tests what the generator writes against a real API
// server: the RBAC and admission policy of a scaffold, tried with the
// operator's own token. That the scaffolds build, pass their own tests and
// run is make new-operator's part of the journey test
// (hack/template/integration), on a copy of the repository. It has no
// non-test code.
package integration
