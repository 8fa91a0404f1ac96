package controller

import (
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// A watch that keeps receiving events lives on; one that receives nothing
// for the timeout ends, the watch beneath is stopped, and onIdle is told.
func TestAnIdleWatchEnds(t *testing.T) {
	fake := watch.NewFake()
	var idled atomic.Int32
	w := watchWithIdleTimeout(fake, 200*time.Millisecond, func() { idled.Add(1) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	// Events every 100ms for 600ms: three times the timeout, never idle.
	go func() {
		for range 6 {
			fake.Modify(pod)
			time.Sleep(100 * time.Millisecond)
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
	w := watchWithIdleTimeout(fake, time.Hour, func() { idled.Add(1) })
	w.Stop()
	w.Stop() // twice is harmless
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("an event after Stop")
	}
	if !fake.IsStopped() || idled.Load() != 0 {
		t.Errorf("stopped %v, idle reports %d; want true, 0", fake.IsStopped(), idled.Load())
	}
}
