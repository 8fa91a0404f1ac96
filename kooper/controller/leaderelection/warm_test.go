package leaderelection_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// warm is a runnable with a RunWarm method, as a *controller.Controller
// has, that records when it started, when it was told to handle and when
// it stopped, and drains for drain after its context is done.
type warm struct {
	drain time.Duration
	fail  error // returned at once from RunWarm, if set
	// failLeading is returned once leading, if set.
	failLeading error

	mu                       sync.Mutex
	started, handling, ended time.Time
	runCalls, runWarmCalls   int
}

func (w *warm) Run(ctx context.Context) error {
	w.mu.Lock()
	w.runCalls++
	w.mu.Unlock()
	lead := make(chan struct{})
	close(lead)
	return w.runWarm(ctx, lead)
}

func (w *warm) RunWarm(ctx context.Context, leading <-chan struct{}) error {
	w.mu.Lock()
	w.runWarmCalls++
	w.mu.Unlock()
	return w.runWarm(ctx, leading)
}

func (w *warm) runWarm(ctx context.Context, leading <-chan struct{}) error {
	w.set(&w.started)
	if w.fail != nil {
		return w.fail
	}
	select {
	case <-leading:
		w.set(&w.handling)
		if w.failLeading != nil {
			w.set(&w.ended)
			return w.failLeading
		}
	case <-ctx.Done():
	}
	<-ctx.Done()
	time.Sleep(w.drain)
	w.set(&w.ended)
	return nil
}

func (w *warm) set(at *time.Time) {
	w.mu.Lock()
	*at = time.Now()
	w.mu.Unlock()
}

func (w *warm) get() (started, handling, ended time.Time, runs, warmRuns int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started, w.handling, w.ended, w.runCalls, w.runWarmCalls
}

func TestAWarmStandbyStartsAtOnceAndHandlesOnlyOnceItLeads(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	a, b := &warm{drain: 200 * time.Millisecond}, &warm{}
	runnerA := newRunner(t, testConfig(client, "a"), a, j.runnable("a", 0))
	cancelA, waitA := run(t, runnerA)
	eventually(t, "a leads and handles", func() bool { _, h, _, _, _ := a.get(); return !h.IsZero() && j.started("a") })

	runnerB := newRunner(t, testConfig(client, "b"), b, j.runnable("b", 0))
	if !runnerB.Standby() {
		t.Error("got b not a standby before it ran, want one")
	}
	cancelB, waitB := run(t, runnerB)
	eventually(t, "b's warm runnable starts while a leads", func() bool { s, _, _, _, _ := b.get(); return !s.IsZero() })
	time.Sleep(300 * time.Millisecond)
	if _, h, _, _, _ := b.get(); !h.IsZero() || j.started("b") {
		t.Fatal("b handles while a holds the lease")
	}

	cancelA()
	if err := waitA(); err != nil {
		t.Fatalf("got a's Run error %v, want nil", err)
	}
	eventually(t, "b takes over", func() bool { _, h, _, _, _ := b.get(); return !h.IsZero() && j.started("b") })
	cancelB()
	if err := waitB(); err != nil {
		t.Errorf("got b's Run error %v, want nil", err)
	}
	_, _, aEnded, _, _ := a.get()
	_, bHandling, bEnded, runs, warmRuns := b.get()
	if !bHandling.After(aEnded) {
		t.Errorf("b handled at %s, before a stopped at %s: two leaders handled at once", bHandling.Format(time.StampMicro), aEnded.Format(time.StampMicro))
	}
	if bEnded.IsZero() || runs != 0 || warmRuns != 1 {
		t.Errorf("got b ended %v, %d Run and %d RunWarm calls, want it ended and RunWarm called once", bEnded, runs, warmRuns)
	}
}

func TestDisableWarmStandbyStartsNothingBeforeLeading(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	cancelA, waitA := run(t, newRunner(t, testConfig(client, "a"), j.runnable("a", 0)))
	eventually(t, "a leads", func() bool { return j.started("a") })
	cfg := testConfig(client, "b")
	cfg.DisableWarmStandby = true
	b := &warm{}
	cancelB, waitB := run(t, newRunner(t, cfg, b))
	time.Sleep(300 * time.Millisecond)
	if s, _, _, _, _ := b.get(); !s.IsZero() {
		t.Fatal("b's runnable started while a leads")
	}
	cancelA()
	if err := waitA(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b takes over", func() bool { _, h, _, _, _ := b.get(); return !h.IsZero() })
	cancelB()
	if err := waitB(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, runs, warmRuns := b.get(); runs != 1 || warmRuns != 0 {
		t.Errorf("got %d Run and %d RunWarm calls, want Run once", runs, warmRuns)
	}
}

func TestAWarmRunnableFailingWhileStandingByEndsRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	cancelA, waitA := run(t, newRunner(t, testConfig(client, "a"), j.runnable("a", 0)))
	defer func() {
		cancelA()
		_ = waitA()
	}()
	eventually(t, "a leads", func() bool { return j.started("a") })
	errCache := errors.New("could not open the cache")
	_, waitB := run(t, newRunner(t, testConfig(client, "b"), &warm{fail: errCache}, j.runnable("b", 0)))
	if err := waitB(); !errors.Is(err, errCache) {
		t.Errorf("got %v, want the warm runnable's error", err)
	}
	if j.started("b") {
		t.Error("b's other runnable started, want nothing run")
	}
}

func TestAWarmStandbyStopsCleanlyWithoutLeading(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	cancelA, waitA := run(t, newRunner(t, testConfig(client, "a"), j.runnable("a", 0)))
	defer func() {
		cancelA()
		_ = waitA()
	}()
	eventually(t, "a leads", func() bool { return j.started("a") })
	b := &warm{}
	cancelB, waitB := run(t, newRunner(t, testConfig(client, "b"), b))
	eventually(t, "b's warm runnable starts", func() bool { s, _, _, _, _ := b.get(); return !s.IsZero() })
	cancelB()
	if err := waitB(); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	if _, h, e, _, _ := b.get(); !h.IsZero() || e.IsZero() {
		t.Errorf("got handling at %v and end at %v, want no handling and an end", h, e)
	}
}

// A warm runnable failing while leading stops the others, and the Lease is
// released only once they have drained: a standby never overlaps them.
func TestAWarmRunnableFailingWhileLeadingReleasesTheLeaseAfterTheOthersDrain(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	errHandler := errors.New("handler broke")
	_, waitA := run(t, newRunner(t, testConfig(client, "a"), &warm{failLeading: errHandler}, j.runnable("a", 300*time.Millisecond)))
	eventually(t, "a leads", func() bool { return j.started("a") })
	b := &warm{}
	cancelB, waitB := run(t, newRunner(t, testConfig(client, "b"), b))
	if err := waitA(); !errors.Is(err, errHandler) {
		t.Errorf("got a's Run error %v, want the warm runnable's", err)
	}
	eventually(t, "b takes over", func() bool { _, h, _, _, _ := b.get(); return !h.IsZero() })
	cancelB()
	if err := waitB(); err != nil {
		t.Fatal(err)
	}
	aEnd := j.get()[0].end
	if _, h, _, _, _ := b.get(); !h.After(aEnd) {
		t.Errorf("b handled at %s, before a's other runnable drained at %s", h.Format(time.StampMicro), aEnd.Format(time.StampMicro))
	}
}

// The method a Runner looks for to keep a runnable warm while standing by.
var _ interface {
	RunWarm(ctx context.Context, leading <-chan struct{}) error
} = (*warm)(nil)
