// Package bench compares Kooper's controller loop with spotahome/kooper v2,
// controller-runtime and a bare client-go informer + workqueue (the floor):
// ./cmd/compare on the same in-memory list+watch source (`go test -bench .`
// runs one full workload per iteration), ./cmd/cluster on a real local
// control plane, each run in a fresh process. See README.md.
package bench
