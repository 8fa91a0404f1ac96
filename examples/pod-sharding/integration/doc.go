// Package integration runs replicas of examples/pod-sharding, as processes,
// against a local control plane: they share the pods, and a stopped
// replica's pods move to the others.
package integration
