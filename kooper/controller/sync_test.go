package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// gatedStream is a Retriever serving the streamed initial list by hand: the
// test sends the initial objects and, when it chooses, the bookmark that
// ends them, so it can look at the controller while its cache is filling.
type gatedStream struct {
	watchers chan *watch.RaceFreeFakeWatcher
}

func (g *gatedStream) List(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return nil, errors.New("the initial list must be streamed")
}

func (g *gatedStream) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		return nil, errors.New("want a streamed initial list")
	}
	w := watch.NewRaceFreeFake()
	g.watchers <- w
	return w, nil
}

func podAt(name, rv string) *corev1.Pod {
	p := pod(name)
	p.ResourceVersion = rv
	return p
}

func endOfInitialEvents(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
}

func TestHandleDuringSyncHandlesObjectsBeforeTheCacheIsComplete(t *testing.T) {
	tests := []struct {
		name             string
		handleDuringSync bool
	}{
		{"default: after the sync", false},
		{"HandleDuringSync: as objects arrive", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := &gatedStream{watchers: make(chan *watch.RaceFreeFakeWatcher, 1)}
			h := &recorder{}
			c, err := controller.New(controller.Config{Name: "t", Handler: h, Retriever: src, ResyncInterval: -1, HandleDuringSync: tt.handleDuringSync})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			w := <-src.watchers
			w.Add(podAt("p1", "1"))
			w.Add(podAt("p2", "2"))

			if tt.handleDuringSync {
				eventually(t, "both pods are handled while the initial list is still open", func() bool {
					return h.countOf("p1") == 1 && h.countOf("p2") == 1
				})
			} else {
				settle()
				if calls := h.Calls(); len(calls) != 0 {
					t.Errorf("got handlings %v before the cache synced, want none by default", calls)
				}
			}
			if c.HasSynced() {
				t.Error("HasSynced is true before the end of the initial events")
			}
			if _, ok := c.List(); ok {
				t.Error("List answers before the end of the initial events")
			}

			w.Action(watch.Bookmark, endOfInitialEvents("2"))
			eventually(t, "the cache syncs and both pods are handled once", func() bool {
				return c.HasSynced() && h.countOf("p1") == 1 && h.countOf("p2") == 1
			})
			settle()
			if calls := h.Calls(); len(calls) != 2 {
				t.Errorf("got handlings %v, want each pod handled once for the initial list", calls)
			}
			if objs, ok := c.List(); !ok || len(objs) != 2 {
				t.Errorf("List after the sync: got %d objects, %v; want 2, true", len(objs), ok)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHandleDuringSyncHandlesEveryObjectOnceThenEveryChange(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := controllertest.NewRetriever(&corev1.Pod{}, m.opts)
			for i := range 50 {
				mustAdd(t, src, pod(fmt.Sprintf("p%d", i)))
			}
			h := &recorder{}
			// A transform that writes: under -race, it must never run on an
			// object a worker is reading.
			var transforms atomic.Int64
			transform := func(obj any) (any, error) {
				transforms.Add(1)
				obj.(*corev1.Pod).Labels = map[string]string{"transformed": "yes"}
				return obj, nil
			}
			stop := start(t, controller.Config{Name: "t", Handler: h, Retriever: src, ResyncInterval: -1, HandleDuringSync: true, Transform: transform})
			eventually(t, "all 50 pods are handled", func() bool { return len(h.Calls()) >= 50 })
			settle()
			for i := range 50 {
				if n := h.countOf(fmt.Sprintf("p%d", i)); n != 1 {
					t.Errorf("p%d handled %d times for the initial list, want 1", i, n)
				}
			}
			if !m.opts.DisableWatchList && transforms.Load() != 50 {
				// client-go alone transforms a streamed initial list twice.
				t.Errorf("got %d transforms for 50 streamed pods, want 50: one each", transforms.Load())
			}
			p := pod("p7")
			p.Labels = map[string]string{"changed": "yes"}
			stored := mustUpdate(t, src, p)
			eventually(t, "the change is handled", func() bool { return h.countOf("p7") == 2 })
			if calls := h.Calls(); calls[len(calls)-1] != "p7@"+stored.(*corev1.Pod).ResourceVersion {
				t.Errorf("got last call %s, want p7 at its new version", calls[len(calls)-1])
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
