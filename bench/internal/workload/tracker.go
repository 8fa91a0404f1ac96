package workload

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Tracker is the benchmark's no-op handler: it only records, per object,
// the highest generation handled, and closes Done once every object's final
// generation has been handled. Its cost is a type assertion, a name parse
// without allocation and a few atomics: the same for every implementation.
type Tracker struct {
	final     []int64
	seen      []atomic.Int64
	calls     atomic.Int64
	unknown   atomic.Int64
	remaining atomic.Int64
	done      chan struct{}
}

// NewTracker tracks n objects receiving updates updates round-robin.
func NewTracker(n, updates int) *Tracker {
	t := &Tracker{
		final: make([]int64, n),
		seen:  make([]atomic.Int64, n),
		done:  make(chan struct{}),
	}
	for i := range t.final {
		t.final[i] = FinalGeneration(i, n, updates)
	}
	t.remaining.Store(int64(n))
	if n == 0 {
		close(t.done)
	}
	return t
}

// Handle records that obj was handled. Safe for concurrent use.
func (t *Tracker) Handle(obj runtime.Object) {
	t.calls.Add(1)
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		t.unknown.Add(1)
		return
	}
	i, ok := index(cm.Name)
	if !ok || i >= len(t.seen) {
		t.unknown.Add(1)
		return
	}
	gen, final := cm.Generation, t.final[i]
	for {
		old := t.seen[i].Load()
		if gen <= old {
			return
		}
		if t.seen[i].CompareAndSwap(old, gen) {
			if old < final && gen >= final && t.remaining.Add(-1) == 0 {
				close(t.done)
			}
			return
		}
	}
}

// Done is closed once every object's final generation has been handled.
func (t *Tracker) Done() <-chan struct{} { return t.done }

// Calls is how many times Handle was called.
func (t *Tracker) Calls() int64 { return t.calls.Load() }

// Remaining is how many objects have not had their final generation handled.
func (t *Tracker) Remaining() int64 { return t.remaining.Load() }

// Unknown is how many handled objects were not benchmark objects (a bug in
// an implementation's wiring).
func (t *Tracker) Unknown() int64 { return t.unknown.Load() }

// index parses the object index from a name made by Object.
func index(name string) (int, bool) {
	if len(name) <= len(namePrefix) || name[:len(namePrefix)] != namePrefix {
		return 0, false
	}
	n := 0
	for j := len(namePrefix); j < len(name); j++ {
		c := name[j]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
