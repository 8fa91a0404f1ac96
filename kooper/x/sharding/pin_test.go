package sharding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Pins: client-go behaviour that the in-stream move of a watch (see
// Runner.Retriever) relies on and that client-go does not promise, as in
// kooper/controller/pin_test.go: TestPin... runs client-go's real informer
// and fails, naming what changed, on a client-go that changes it;
// TestThePinCatches... shows the same check failing against a fake of the
// change.

// scriptLW streams script as the answer to the first watch, a streamed
// initial list, and records every call: "list", "watch" or "stream".
type scriptLW struct {
	script []watch.Event

	mu    sync.Mutex
	calls []string
}

func (s *scriptLW) record(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

func (s *scriptLW) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *scriptLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s *scriptLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

func (s *scriptLW) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	s.record("list")
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "100"}}, nil
}

func (s *scriptLW) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(len(s.script), false)
	if !ptr.Deref(opts.SendInitialEvents, false) || len(s.called()) > 0 {
		s.record("watch")
		return w, nil
	}
	s.record("stream")
	for _, e := range s.script {
		w.Action(e.Type, e.Object)
	}
	return w, nil
}

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func cmBookmark(rv string, end bool) *corev1.ConfigMap {
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if end {
		b.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return b
}

// inStreamScript is what a watch moved twice sends: a move during the
// reflector's streamed initial list (x forwarded, then deleted before the
// bookmark that ends it), and a move after it (a's ADDED again, c's added,
// b's deleted, the bookmark without its annotation), then a change.
var inStreamScript = []watch.Event{
	{Type: watch.Added, Object: cm("a", "1")},
	{Type: watch.Added, Object: cm("b", "2")},
	{Type: watch.Added, Object: cm("x", "3")},
	{Type: watch.Deleted, Object: cm("x", "3")},
	{Type: watch.Bookmark, Object: cmBookmark("3", true)},
	{Type: watch.Added, Object: cm("a", "1")},
	{Type: watch.Added, Object: cm("c", "4")},
	{Type: watch.Deleted, Object: cm("b", "2")},
	{Type: watch.Bookmark, Object: cmBookmark("5", false)},
	{Type: watch.Modified, Object: cm("c", "6")},
}

// inStreamWant is what a controller's handler must see of inStreamScript.
var inStreamWant = []string{"add a 1", "add b 2", "update a 1->1", "add c 4", "delete b", "update c 4->6"}

// checkInStreamMove runs a real informer over lw and reports how it took
// inStreamScript's moves, if not as Runner.Retriever needs.
func checkInStreamMove(t *testing.T, lw *scriptLW) error {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	log := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}
	informer := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	rv := func(o any) string { return o.(metav1.Object).GetResourceVersion() }
	name := func(o any) string {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		return o.(metav1.Object).GetName()
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { log(fmt.Sprintf("add %s %s", name(o), rv(o))) },
		UpdateFunc: func(o, n any) { log(fmt.Sprintf("update %s %s->%s", name(n), rv(o), rv(n))) },
		DeleteFunc: func(o any) { log("delete " + name(o)) },
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= len(inStreamWant) || len(lw.called()) > 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // anything more it would do
	mu.Lock()
	defer mu.Unlock()
	if len(seen) >= 2 {
		slices.Sort(seen[:2]) // the initial list's adds come in no order
	}
	keys := informer.GetStore().ListKeys()
	slices.Sort(keys)
	const depends = "kooper/x/sharding/retriever.go (Runner.Retriever's in-stream move) depends on it: a move would relist, after client-go's backoff, or leave the cache wrong"
	switch {
	case !slices.Equal(lw.called(), []string{"stream"}):
		return fmt.Errorf("the reflector called %q, want one streamed initial list and nothing more: it no longer keeps a watch open across an in-stream relist (ADDED events of held keys, DELETED events, a bookmark mid-watch); %s", lw.called(), depends)
	case !slices.Equal(seen, inStreamWant):
		return fmt.Errorf("the handler saw %q, want %q: the reflector no longer applies an ADDED event of a key it holds as an update, a DELETED event before the initial list's end bookmark to what it replaces its store with, or DELETED and bookmark events mid-watch as before; %s", seen, inStreamWant, depends)
	case !slices.Equal(keys, []string{"ns/a", "ns/c"}):
		return fmt.Errorf("the cache holds %q, want ns/a and ns/c; %s", keys, depends)
	}
	return nil
}

func TestPinTheReflectorTakesAnInStreamRelist(t *testing.T) {
	defer goleak.VerifyNone(t)
	if err := checkInStreamMove(t, &scriptLW{script: inStreamScript}); err != nil {
		t.Fatal(err)
	}
}

// A reflector that ended its watch at a move looks, to the check, like a
// watch that ends with an error there.
func TestThePinCatchesAReflectorThatEndsTheWatchAtAMove(t *testing.T) {
	gone := apierrors.NewResourceExpired("gone").Status()
	script := append(slices.Clone(inStreamScript[:5]), watch.Event{Type: watch.Error, Object: &gone})
	script = append(script, inStreamScript[5:]...)
	err := checkInStreamMove(t, &scriptLW{script: script})
	if err == nil || !strings.Contains(err.Error(), "the reflector called") {
		t.Fatalf("got %v, want the pin to fail on the reflector's new calls", err)
	}
	t.Logf("the pin fails with: %v", err)
}
