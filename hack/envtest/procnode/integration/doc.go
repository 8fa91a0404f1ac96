// Package integration tests package procnode on a local control plane:
// Deployments of a small test program run on a procnode node, as their
// specs say.
package integration
