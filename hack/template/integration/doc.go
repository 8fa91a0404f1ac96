// Package integration is make rename's, make new-operator's and make
// remove-operator's end-to-end test: on a copy of the repository, a
// newcomer's whole journey to a repository of their own (scaffold three
// operators, rename everything, remove a sample), then every check make
// test makes of it that the journey could break, each run once for the
// whole tree, and last the scaffolds' removal. That journey takes about a
// quarter of an hour: make test-journey runs it, and CI after make test.
// make test runs its short version (one scaffold, renamed and removed,
// without the integration tests and make run). Neither runs with -short.
// It has no non-test code.
package integration
