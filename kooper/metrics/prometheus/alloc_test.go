//go:build !race

package prometheus_test

import (
	"testing"
	"time"
)

// Not built with the race detector, which changes allocation counts: make
// test-unit runs it in a go test of its own, without -race.
func TestRecordingDoesNotAllocate(t *testing.T) {
	rec, _ := newRecorder(t)
	name := "pods"
	rec.IncRetry(name) // the first call creates the series

	got := testing.AllocsPerRun(100, func() {
		rec.IncQueuedEvent(name, "change")
		rec.IncQueuedEvent(name, "enqueue")
		rec.ObserveQueueWait(name, time.Millisecond)
		rec.ObserveHandling(name, false, time.Millisecond)
		rec.IncRetry(name)
		rec.IncDropped(name, "max_retries")
		rec.IncPanic(name)
		rec.AddQueueLength(name, 1)
		rec.IncRetrieveError(name, "api")
		rec.ObserveCacheWait(name, true, time.Millisecond)
		rec.ObserveCacheWait(name, false, time.Millisecond)
	})
	if got != 0 {
		t.Errorf("got %v allocations per run, want 0", got)
	}
}
