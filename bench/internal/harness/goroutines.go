package harness

import (
	"bytes"
	"fmt"
	"runtime"
	"time"

	"github.com/kooperkit/kooper/bench/internal/memsource"
)

// sourcePump is in the stack of every goroutine serving one watch of the
// in-memory source. A caller that passed no cancellable context
// (spotahome/kooper v2 uses context.TODO) can never stop a watch it did not
// stop itself, so its goroutine stays parked for the life of the process.
// It does no work; the harness counts such goroutines apart from the
// implementations' own.
var sourcePump = memsource.Pump

// goroutines returns how many goroutines exist, how many of them serve a
// watch of the source, and the stacks of the others.
func goroutines() (total, pumps int, others [][]byte) {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		total++
		if bytes.Contains(g, sourcePump) {
			pumps++
		} else {
			others = append(others, g)
		}
	}
	return total, pumps, others
}

// waitGoroutines waits until, apart from source watch goroutines, no more
// goroutines run than before the run (own and pumps as counted then), so
// nothing of one run keeps working during the next. It returns how many
// source watch goroutines the run left behind.
func waitGoroutines(own, pumps int, d time.Duration) (leakedPumps int, err error) {
	deadline := time.Now().Add(d)
	for {
		// Cheap check first: goroutines() stops the world.
		if runtime.NumGoroutine() <= own+pumps {
			return 0, nil
		}
		total, p, others := goroutines()
		if total-p <= own {
			return max(p-pumps, 0), nil
		}
		if time.Now().After(deadline) {
			return max(p-pumps, 0), fmt.Errorf("%d goroutines (besides %d source watches) still running %s after stop, %d before the run:\n%s",
				total-p, p, d, own, bytes.Join(others, []byte("\n\n")))
		}
		time.Sleep(time.Millisecond)
	}
}
