// Package integration runs the library's replicas through faults on a
// local control plane (package faults): each fault on its own, then mixed
// at random from a seed the test prints.
package integration
