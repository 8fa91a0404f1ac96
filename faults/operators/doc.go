// Package operators runs the operators' own binaries, built from
// operators/, as replicas under leader election through the fault harness
// (package faults), on a local control plane with a kwok node, and checks
// what each operator promises while the faults go on and after they stop.
// Each operator's run is a test file of its own, named after the operator,
// whose doc comment states the promises it checks; main_test.go holds what
// the runs share. It has no non-test code.
package operators
