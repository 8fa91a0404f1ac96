package controller_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// Once the right to handle has ended (a paused or cut-off leader), no key
// is handled, and a running handling is cancelled; the keys are handled
// once the right is back, none lost.
func TestNoHandlingPastValidUntil(t *testing.T) {
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	if _, err := r.Add(pod("slow")); err != nil {
		t.Fatal(err)
	}
	var handled, cancelled atomic.Int32
	started := make(chan struct{}, 10)
	clk := clocktesting.NewFakeClock(time.Now())
	rec := newMetrics()
	c, err := controller.New(controller.WithClock(controller.Config{
		Name: "validity", Retriever: r, ResyncInterval: -1, MetricsRecorder: rec,
		Handler: controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
			if obj.(*corev1.Pod).Name == "slow" {
				started <- struct{}{}
				if cancelled.Load() == 0 {
					// The first handling runs until it is cancelled.
					<-ctx.Done()
					cancelled.Add(1)
					return ctx.Err()
				}
			}
			handled.Add(1)
			return nil
		}),
	}, clk))
	if err != nil {
		t.Fatal(err)
	}
	c.SetValidUntil(clk.Now().Add(300 * time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-started
	clk.Step(300 * time.Millisecond)
	eventually(t, "the running handling is cancelled at the expiry", func() bool { return cancelled.Load() == 1 })

	// Expired: a new object waits, taken and queued again every second.
	if _, err := r.Add(pod("new")); err != nil {
		t.Fatal(err)
	}
	taken := func() int { return rec.get("queue wait") }
	eventually(t, "both keys are taken", func() bool { return taken() >= 2 })
	for range 3 {
		n := taken()
		eventually(t, "the keys are taken again a second later", func() bool {
			clk.Step(100 * time.Millisecond)
			return taken() >= n+2
		})
	}
	if n := handled.Load(); n != 0 {
		t.Fatalf("%d handlings while the right had ended", n)
	}
	// Renewed: both keys are handled, the cancelled one again.
	c.SetValidUntil(clk.Now().Add(time.Hour))
	eventually(t, "both keys handled once the right is back", func() bool {
		clk.Step(100 * time.Millisecond) // the retries are due within a second
		return handled.Load() == 2
	})
	if n := len(started); n != 1 {
		t.Errorf("the cancelled key handled again %d times, want once", n)
	}
}
