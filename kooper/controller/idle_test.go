package controller

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// A watch that keeps receiving events lives on; one that receives nothing
// for the timeout ends, the watch beneath is stopped, and onIdle is told.
func TestAnIdleWatchEnds(t *testing.T) {
	fake := watch.NewFake()
	clk := testingclock.NewFakeClock(time.Now())
	var idled atomic.Int32
	w := watchWithIdleTimeout(clk, fake, time.Second, func() { idled.Add(1) }, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	// An event every 900ms, six of them: never idle meanwhile.
	for range 6 {
		go fake.Modify(pod)
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified {
				t.Fatalf("got %v, want Modified", ev.Type)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("an event did not come through")
		}
		waitForWaiters(t, clk) // the idle timer, reset
		clk.Step(900 * time.Millisecond)
	}
	if idled.Load() != 0 {
		t.Fatal("a watch receiving events was ended as idle")
	}
	clk.Step(100 * time.Millisecond)
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("an event after the last one")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the idle watch did not end")
	}
	if idled.Load() != 1 || !fake.IsStopped() {
		t.Errorf("onIdle called %d times, watch beneath stopped: %v; want once, true", idled.Load(), fake.IsStopped())
	}
}

// waitForWaiters waits until something waits on clk: a goroutine has
// armed its timer.
func waitForWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("nothing waits on the clock after 5s")
		}
		goruntime.Gosched()
	}
}

// Stopping the wrapper stops the watch beneath and closes the channel, with
// no idle report.
func TestStoppingAnIdleWatch(t *testing.T) {
	fake := watch.NewFake()
	var idled atomic.Int32
	w := watchWithIdleTimeout(clock.RealClock{}, fake, time.Hour, func() { idled.Add(1) }, nil)
	w.Stop()
	w.Stop() // twice is harmless
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("an event after Stop")
	}
	if !fake.IsStopped() || idled.Load() != 0 {
		t.Errorf("stopped %v, idle reports %d; want true, 0", fake.IsStopped(), idled.Load())
	}
}

// hungRetriever's watch requests are never answered: they return only when
// their context is cancelled, as over a stalled connection.
type hungRetriever struct{ answered bool }

func (hungRetriever) List(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return &corev1.PodList{}, nil
}

func (r hungRetriever) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	if r.answered {
		return watch.NewFake(), nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A watch request unanswered for the idle timeout is cancelled, so the
// reflector asks again; an answered one is the idle-bounded watch, whose
// request context lives until it ends.
func TestAnUnansweredWatchRequestEnds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	var idled atomic.Int32
	errs := make(chan error, 1)
	go func() {
		_, err := watchUnanswered(context.Background(), clk, hungRetriever{}, metav1.ListOptions{}, 200*time.Millisecond, func() { idled.Add(1) })
		errs <- err
	}()
	waitForWaiters(t, clk)
	clk.Step(200 * time.Millisecond)
	if err := <-errs; !errors.Is(err, errWatchUnanswered) || idled.Load() != 1 {
		t.Fatalf("got %v and %d idle reports, want errWatchUnanswered and one", err, idled.Load())
	}

	// Cancelled by its caller: the caller's error, no idle report.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := watchUnanswered(ctx, clk, hungRetriever{}, metav1.ListOptions{}, time.Hour, func() { idled.Add(1) })
		errs <- err
	}()
	waitForWaiters(t, clk)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) || idled.Load() != 1 {
		t.Fatalf("got %v and %d idle reports, want context.Canceled and still one", err, idled.Load())
	}

	w, err := watchUnanswered(context.Background(), clk, hungRetriever{answered: true}, metav1.ListOptions{}, time.Hour, func() { idled.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("an event after Stop")
	}
}
