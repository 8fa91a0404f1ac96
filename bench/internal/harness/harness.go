// Package harness runs one workload against one implementation and measures
// it: time until every object's final version was handled, events per
// second, allocations per event and handler calls.
package harness

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/kooperkit/kooper/bench/internal/memsource"

	"github.com/kooperkit/kooper/bench/internal/impls"
	"github.com/kooperkit/kooper/bench/internal/workload"
)

// Config describes one run.
type Config struct {
	// Objects seeded before the run. Default 10000.
	Objects int
	// Updates made round-robin while the implementation runs. Default 100000.
	Updates int
	// DisableWatchList makes the source refuse streamed initial lists, so
	// informers fall back to LIST+WATCH.
	DisableWatchList bool
	// Timeout bounds the wait for every final version to be handled, so a
	// hang fails the run. Default 5 minutes.
	Timeout time.Duration
	// StopTimeout bounds the wait for the implementation (and any goroutine
	// it started) to stop once its context is cancelled. Default 10 seconds.
	StopTimeout time.Duration
}

func (c *Config) defaults() {
	if c.Objects <= 0 {
		c.Objects = 10000
	}
	if c.Updates < 0 {
		c.Updates = 0
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 10 * time.Second
	}
}

// Result is what one run measured.
type Result struct {
	Impl string
	// Events is objects + updates: what the source emitted.
	Events int
	// Elapsed is from starting the implementation until every object's
	// final version was handled (time-to-all-handled).
	Elapsed time.Duration
	// Allocs is runtime.MemStats.Mallocs over Elapsed, the source's and
	// producer's allocations included.
	Allocs uint64
	// HandlerCalls counts handler calls (fewer than Events when the queue
	// merged several changes of one object).
	HandlerCalls int64
	// SourceWatchLeaks counts goroutines the source left parked after the
	// run: one per refused watch-list request from a caller whose context
	// is never cancelled (see goroutines.go). Not the implementation's own.
	SourceWatchLeaks int
}

// EventsPerSecond is Events divided by Elapsed.
func (r Result) EventsPerSecond() float64 { return float64(r.Events) / r.Elapsed.Seconds() }

// AllocsPerEvent is Allocs divided by Events.
func (r Result) AllocsPerEvent() float64 { return float64(r.Allocs) / float64(r.Events) }

// Run seeds a fresh source with cfg.Objects objects, starts impl on it and,
// once impl has made its first list or watch call, makes cfg.Updates updates
// from one goroutine as fast as the source takes them. It returns when every
// object's final version has been handled and impl has fully stopped.
// The error reports a timeout (a hang), an implementation error, a handled
// object that was not a benchmark object, or goroutines left running.
func Run(ctx context.Context, impl impls.Impl, cfg Config) (Result, error) {
	cfg.defaults()
	res := Result{Impl: impl.Name(), Events: cfg.Objects + cfg.Updates}
	src := memsource.New(cfg.DisableWatchList)
	objs, err := workload.Seed(src, cfg.Objects)
	if err != nil {
		return res, err
	}
	tracker := workload.NewTracker(cfg.Objects, cfg.Updates)

	// Start every run from the same heap state.
	runtime.GC()
	total, pumps, _ := goroutines()
	own := total - pumps
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runDone := make(chan error, 1)
	start := time.Now()
	go func() { runDone <- impl.Run(runCtx, src, tracker.Handle) }()

	// Produce once impl is connected, so every update reaches it as a watch
	// event (or, with LIST+WATCH, is replayed from the list's version) and
	// all implementations see the same event stream.
	produceDone := make(chan error, 1)
	go func() {
		for src.Calls() == 0 {
			if runCtx.Err() != nil {
				produceDone <- nil
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
		produceDone <- workload.Produce(src, objs, cfg.Updates)
	}()

	// Wait for every final version to be handled; an early error from the
	// producer or the implementation, or the timeout, ends the wait.
	timeout := time.NewTimer(cfg.Timeout)
	defer timeout.Stop()
	var errs []error
	runCh, produceCh := runDone, produceDone
	for waiting := true; waiting; {
		select {
		case <-tracker.Done():
			res.Elapsed = time.Since(start)
			runtime.ReadMemStats(&after)
			res.Allocs = after.Mallocs - before.Mallocs
			waiting = false
		case err := <-produceCh:
			produceCh = nil
			if err != nil {
				errs = append(errs, err)
				waiting = false
			}
		case err := <-runCh:
			runCh = nil
			errs = append(errs, fmt.Errorf("%s: run returned before every final version was handled: %w", res.Impl, err))
			waiting = false
		case <-timeout.C:
			errs = append(errs, fmt.Errorf("%s: %d of %d objects not handled at their final version after %s (hang?)",
				res.Impl, tracker.Remaining(), cfg.Objects, cfg.Timeout))
			waiting = false
		}
	}
	res.HandlerCalls = tracker.Calls()

	// Stop the implementation and wait for everything of this run to end.
	cancel()
	stopTimeout := time.NewTimer(cfg.StopTimeout)
	defer stopTimeout.Stop()
	for runCh != nil || produceCh != nil {
		select {
		case err := <-runCh:
			runCh = nil
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: run failed: %w", res.Impl, err))
			}
		case err := <-produceCh:
			produceCh = nil
			errs = append(errs, err)
		case <-stopTimeout.C:
			return res, errors.Join(append(errs, fmt.Errorf("%s: did not stop within %s of its context being cancelled", res.Impl, cfg.StopTimeout))...)
		}
	}
	if n := tracker.Unknown(); n > 0 {
		errs = append(errs, fmt.Errorf("%s: handled %d objects that are not benchmark objects", res.Impl, n))
	}
	leaked, err := waitGoroutines(own, pumps, cfg.StopTimeout)
	res.SourceWatchLeaks = leaked
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", res.Impl, err))
	}
	return res, errors.Join(errs...)
}
