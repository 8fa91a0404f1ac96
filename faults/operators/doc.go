// Package operators runs the sample operators' own binaries, built from
// operators/, as replicas under leader election through the fault harness
// (package faults), on a local control plane with a kwok node, and checks
// what each operator promises while the faults go on and after they stop:
// the pod-terminator never takes a workload below its minimum, never
// terminates twice in one period, and counts every pod it terminates the
// same way in status, Events and metrics; the multi-resource operator's
// Tenants converge to their spec. Its tests are in _test files.
package operators
