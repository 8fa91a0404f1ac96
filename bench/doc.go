// Package bench compares Kooper's controller loop with spotahome/kooper v2,
// controller-runtime and a bare client-go informer + workqueue (the floor)
// on the same in-memory list+watch source. See README.md; the comparison
// program is ./cmd/compare, and `go test -bench .` runs one full workload
// per iteration.
package bench
