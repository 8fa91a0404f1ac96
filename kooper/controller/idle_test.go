package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// A watch that keeps receiving events lives on; one that receives nothing
// for the timeout ends, the watch beneath is stopped, and onIdle is told.
func TestAnIdleWatchEnds(t *testing.T) {
	fake := watch.NewFake()
	var idled atomic.Int32
	// The timeout is twenty times the gap between events, so that a loaded
	// machine (make test runs this beside a cluster) does not stretch a gap
	// past it: the wrapper would stop the fake, and the next Modify would
	// panic on its closed channel.
	w := watchWithIdleTimeout(fake, time.Second, func() { idled.Add(1) }, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	// Events every 50ms, six of them: never idle meanwhile.
	go func() {
		for range 6 {
			fake.Modify(pod)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for range 6 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified {
				t.Fatalf("got %v, want Modified", ev.Type)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("an event did not come through")
		}
	}
	if idled.Load() != 0 {
		t.Fatal("a watch receiving events was ended as idle")
	}
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

// Stopping the wrapper stops the watch beneath and closes the channel, with
// no idle report.
func TestStoppingAnIdleWatch(t *testing.T) {
	fake := watch.NewFake()
	var idled atomic.Int32
	w := watchWithIdleTimeout(fake, time.Hour, func() { idled.Add(1) }, nil)
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
	var idled atomic.Int32
	began := time.Now()
	_, err := watchUnanswered(context.Background(), hungRetriever{}, metav1.ListOptions{}, 200*time.Millisecond, func() { idled.Add(1) })
	if !errors.Is(err, errWatchUnanswered) || idled.Load() != 1 {
		t.Fatalf("got %v and %d idle reports, want errWatchUnanswered and one", err, idled.Load())
	}
	if waited := time.Since(began); waited > 5*time.Second {
		t.Errorf("the request was cancelled after %s, want about the 200ms timeout", waited)
	}

	// Cancelled by its caller: the caller's error, no idle report.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := watchUnanswered(ctx, hungRetriever{}, metav1.ListOptions{}, time.Hour, func() { idled.Add(1) }); !errors.Is(err, context.Canceled) || idled.Load() != 1 {
		t.Fatalf("got %v and %d idle reports, want context.Canceled and still one", err, idled.Load())
	}

	w, err := watchUnanswered(context.Background(), hungRetriever{answered: true}, metav1.ListOptions{}, time.Hour, func() { idled.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("an event after Stop")
	}
}
