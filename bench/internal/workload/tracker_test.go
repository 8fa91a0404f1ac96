package workload_test

import (
	"testing"

	"github.com/kooperkit/kooper/bench/internal/workload"
)

func TestFinalGenerationSpreadsUpdatesRoundRobin(t *testing.T) {
	const n, updates = 3, 7 // objects 0 gets 3 updates, 1 and 2 get 2
	want := []int64{4, 3, 3}
	for i, w := range want {
		if got := workload.FinalGeneration(i, n, updates); got != w {
			t.Errorf("object %d: got final generation %d, want %d", i, got, w)
		}
	}
}

func TestTrackerIsDoneOnlyOnceEveryFinalGenerationWasHandled(t *testing.T) {
	tr := workload.NewTracker(2, 2) // both objects end at generation 2
	handle := func(i int, gen int64) {
		obj := workload.Object(i)
		obj.Generation = gen
		tr.Handle(obj)
	}
	handle(0, 2)
	handle(1, 1)
	handle(0, 1) // an older version handled late changes nothing
	select {
	case <-tr.Done():
		t.Fatal("got done with object 1 at generation 1, want not done")
	default:
	}
	handle(1, 2)
	select {
	case <-tr.Done():
	default:
		t.Fatalf("got not done with %d objects remaining, want done", tr.Remaining())
	}
	if got := tr.Calls(); got != 4 {
		t.Errorf("got %d calls, want 4", got)
	}
	if got := tr.Unknown(); got != 0 {
		t.Errorf("got %d unknown objects, want 0", got)
	}
}
