package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

func TestEnqueueHandlesTheCachedObjectOfAKey(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := fakeapi.NewRetriever(&corev1.Pod{}, mode.opts)
			mustAdd(t, src, pod("a"))
			h := &recorder{}
			c, err := controller.New(controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			c.Enqueue("ns/a") // before Run: dropped, the initial list queues a anyway
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			eventually(t, "a is handled for the initial list", func() bool { return h.countOf("a") == 1 })

			c.Enqueue("ns/a")
			eventually(t, "the enqueued key is handled", func() bool { return h.countOf("a") == 2 })
			c.Enqueue("ns/missing") // no such object: dropped by the worker
			c.Enqueue("ns/a")
			eventually(t, "the key enqueued after a missing one is handled", func() bool { return h.countOf("a") == 3 })
			settle()
			if got := h.Calls(); len(got) != 3 {
				t.Errorf("got calls %q, want 3 calls for a", got)
			}

			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			c.Enqueue("ns/a") // after Run: dropped, and no panic
		})
	}
}

func TestGetReadsTheCacheWhileRunRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	stored := mustAdd(t, src, pod("a"))
	c, err := controller.New(controller.Config{Name: "test", Handler: &recorder{}, Retriever: src, ResyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("ns/a"); ok {
		t.Error("got an object before Run, want none")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	eventually(t, "the cache syncs", c.HasSynced)
	got, ok := c.Get("ns/a")
	want := stored.(*corev1.Pod).ResourceVersion
	if !ok || got.(*corev1.Pod).ResourceVersion != want {
		t.Errorf("got %v, %v, want pod a at resourceVersion %s", got, ok, want)
	}
	if _, ok := c.Get("ns/b"); ok {
		t.Error("got an object for a key the cache does not hold, want none")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, ok := c.Get("ns/a"); ok {
		t.Error("got an object after Run returned, want none")
	}
}

func TestQueuedKeysAreCountedBySource(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("listed"))
	rec := newMetrics()
	h := &recorder{answer: func(p *corev1.Pod, n int) error {
		switch {
		case p.Name == "failing" && n == 1:
			return errors.New("fails once")
		case p.Name == "periodic" && n == 1:
			return controller.RequeueAfter(time.Millisecond)
		}
		return nil
	}}
	c, err := controller.New(controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: time.Second,
		RetryBaseDelay: time.Millisecond, MetricsRecorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	eventually(t, "the cache syncs", c.HasSynced)
	mustAdd(t, src, pod("failing"))
	mustAdd(t, src, pod("periodic"))
	c.Enqueue("ns/listed")
	eventually(t, "every source is seen", func() bool {
		return rec.get("queued "+"initial") == 1 &&
			rec.get("queued "+"change") == 2 &&
			rec.get("queued "+"retry") == 1 &&
			rec.get("queued "+"requeue") == 1 &&
			rec.get("queued "+"enqueue") == 1 &&
			rec.get("queued "+"resync") >= 3 // each object, after a second
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// Fresh changes first: a pod created while the initial list's backlog waits
// is handled next, not after the backlog.
func TestAChangeIsHandledBeforeTheListedBacklog(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := fakeapi.NewRetriever(&corev1.Pod{}, mode.opts)
			for i := range 50 {
				mustAdd(t, src, pod(fmt.Sprintf("listed-%02d", i)))
			}
			release := make(chan struct{})
			rec := newMetrics()
			h := &recorder{answer: func(_ *corev1.Pod, _ int) error {
				<-release // the first handling holds the only worker
				return nil
			}}
			stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ConcurrentWorkers: 1,
				ResyncInterval: -1, MetricsRecorder: rec})
			eventually(t, "the first listed pod is being handled", func() bool { return len(h.Calls()) == 1 })
			mustAdd(t, src, pod("fresh"))
			eventually(t, "the new pod is queued", func() bool { return rec.get("queued "+"change") == 1 })
			close(release)
			eventually(t, "every pod is handled", func() bool { return len(h.Calls()) == 51 })
			if got := h.Calls()[1]; !strings.HasPrefix(got, "fresh@") {
				t.Errorf("got %s handled second, want the new pod, before the 49 listed ones still waiting", got)
			}
			_ = stop()
		})
	}
}
