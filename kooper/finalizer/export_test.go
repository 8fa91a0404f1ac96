package finalizer

// Add and Remove are the helpers a Finalizer changes metadata.finalizers
// with, for the tests of their edge cases.
var (
	Add    = add
	Remove = remove
)
