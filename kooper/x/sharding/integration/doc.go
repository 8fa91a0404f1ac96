// Package integration holds the integration tests of package x/sharding:
// replicas of a sharded controller, in process, against a real local
// control plane (hack/envtest), with the ShardedListAndWatch feature gate
// on (server-side) and off (client-side). They are part of `make test`. It
// has no non-test code.
package integration
