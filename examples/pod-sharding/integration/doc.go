// Package integration runs replicas of examples/pod-sharding, as processes,
// against a local control plane: they share the pods, a stopped
// replica's pods move to the others, and a crafted Lease takes no slot
// from them (it shows on /readyz of a replica it keeps from its share).
package integration
