package controller_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// A warm standby fills its cache and queues every key, but handles
// nothing until it leads; it then handles each object once, at its latest
// state, with no new list.
func TestRunWarmHandlesNothingUntilLeading(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := fakeapi.NewRetriever(&corev1.Pod{}, mode.opts)
			for i := range 5 {
				mustAdd(t, src, pod(fmt.Sprintf("p%d", i)))
			}
			h := &recorder{}
			rec := newMetrics()
			c, err := controller.New(controller.Config{Name: "test", Handler: h, Retriever: src,
				ResyncInterval: -1, MetricsRecorder: rec})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			leading := make(chan struct{})
			done := make(chan error, 1)
			go func() { done <- c.RunWarm(ctx, leading) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("RunWarm: %v", err)
				}
			}()

			eventually(t, "the standby's cache syncs", c.HasSynced)
			changed := pod("p0")
			changed.Labels = map[string]string{"v": "2"}
			latest := mustUpdate(t, src, changed).(*corev1.Pod)
			mustAdd(t, src, pod("new"))
			settle()
			if calls := h.Calls(); len(calls) != 0 {
				t.Fatalf("got calls %q while standing by, want none", calls)
			}
			if n := rec.get("queue length"); n != 0 {
				t.Errorf("got %d keys queued while standing by, want none: the queue fills at the takeover", n)
			}
			lists := len(src.Calls())

			close(leading)
			eventually(t, "every object is handled once leading", func() bool { return len(h.Calls()) == 6 })
			settle()
			if n := len(h.Calls()); n != 6 {
				t.Errorf("got %d calls, want 6: each object once", n)
			}
			if n := rec.get("queued " + "initial"); n != 6 {
				t.Errorf("got %d keys queued at the takeover, want the 6 cached objects", n)
			}
			if n := h.countOf("p0"); n != 1 {
				t.Errorf("got p0 handled %d times, want once, at its latest state", n)
			}
			for _, call := range h.Calls() {
				if call == "p0@"+latest.ResourceVersion {
					break
				}
				if call[:3] == "p0@" {
					t.Errorf("got %s, want p0 at %s", call, latest.ResourceVersion)
				}
			}
			if got := len(src.Calls()); got != lists {
				t.Errorf("got %d list or watch calls at takeover, want none", got-lists)
			}
		})
	}
}
