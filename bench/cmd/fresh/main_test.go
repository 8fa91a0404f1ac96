package main

import (
	"testing"
	"time"

	"github.com/kooperkit/kooper/bench/internal/impls"
)

// Every implementation handles every object, the fresh ones included, on a
// tiny workload: the figures come from `go run ./cmd/fresh`, not from here.
func TestEveryImplementationHandlesEveryFreshObject(t *testing.T) {
	impls.SilenceLogs()
	for _, impl := range []impls.Impl{impls.Kooper{}, impls.ControllerRuntime{PriorityQueue: true}, impls.ControllerRuntime{}, impls.KooperV2{}, impls.Floor{}} {
		t.Run(impl.Name(), func(t *testing.T) {
			r, err := run(impl, 200, 10, time.Millisecond, 100*time.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Waits) != 10 {
				t.Errorf("got %d fresh objects handled, want 10", len(r.Waits))
			}
		})
	}
}

func TestTheChartIsWritten(t *testing.T) {
	path := t.TempDir() + "/fresh.png"
	if err := writePNG(path, []bar{{"kooper", 1.2, 2.5}, {"floor", 3300, 3800}}); err != nil {
		t.Fatal(err)
	}
}
