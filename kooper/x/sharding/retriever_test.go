package sharding

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// shardFilter applies ListOptions.ShardSelector as an API server with the
// ShardedListAndWatch gate does: lists and watches carry the matching
// objects only, and a filtered list says so in metadata.shardInfo.
type shardFilter struct{ *fakeapi.Retriever }

func (f shardFilter) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := f.Retriever.List(ctx, opts)
	if err != nil || opts.ShardSelector == "" {
		return obj, err
	}
	sel := apisharding.NewSelector(requirements(opts.ShardSelector)...)
	list := obj.(*metav1.List)
	var kept []runtime.RawExtension
	for _, item := range list.Items {
		if ok, _ := sel.Matches(item.Object); ok {
			kept = append(kept, item)
		}
	}
	list.Items = kept
	list.ShardInfo = &metav1.ShardInfo{Selector: opts.ShardSelector}
	return list, nil
}

func (f shardFilter) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := f.Retriever.Watch(ctx, opts)
	if err != nil || opts.ShardSelector == "" {
		return w, err
	}
	sel := apisharding.NewSelector(requirements(opts.ShardSelector)...)
	out := make(chan watch.Event)
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(out)
		defer w.Stop()
		for e := range w.ResultChan() {
			if e.Type != watch.Bookmark && e.Type != watch.Error {
				if ok, _ := sel.Matches(e.Object); !ok {
					continue
				}
			}
			select {
			case out <- e:
			case <-stop:
				return
			}
		}
	}()
	return &funcWatch{ch: out, stop: func() { once.Do(func() { close(stop); w.Stop() }) }}, nil
}

type funcWatch struct {
	ch   chan watch.Event
	stop func()
}

func (w *funcWatch) ResultChan() <-chan watch.Event { return w.ch }
func (w *funcWatch) Stop()                          { w.stop() }

// cachedSlots returns the slots of the objects c's cache holds, sorted and
// compacted, and how many objects.
func cachedSlots(c *controller.Controller, count int) ([]int, int) {
	objs, _ := c.List()
	var slots []int
	for _, o := range objs {
		slots = append(slots, SlotOf(o.(metav1.Object).GetUID(), count))
	}
	slices.Sort(slots)
	return slices.Compact(slots), len(objs)
}

// Server-side, the cache holds the objects of the acquired slots only: it
// lists again whenever they change, dropping the released slots' objects
// and handling the acquired ones'. None is ever handled outside them.
func TestServerSideCachesOnlyTheAcquiredSlots(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			const pods, count = 64, 4
			store := fakeapi.NewRetriever(&corev1.Pod{}, mode.opts)
			perSlot := make([]int, count)
			for i := range pods {
				p := shardedPod(i)
				perSlot[SlotOf(p.UID, count)]++
				if _, err := store.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			r := newRunner(t, count)
			var mu sync.Mutex
			handled := map[string]int{} // pod → slot
			var outside []string
			h := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				m := obj.(metav1.Object)
				slot := SlotOf(m.GetUID(), count)
				mu.Lock()
				defer mu.Unlock()
				handled[m.GetName()] = slot
				if !r.gate.holds(slot) {
					outside = append(outside, m.GetName())
				}
				return nil
			})
			c := start(t, r, ModeServerSide, controller.Config{Name: "c", Retriever: shardFilter{store}, Handler: h})
			eventually(t, "the cache syncs", c.HasSynced)
			if slots, n := cachedSlots(c, count); n != 0 {
				t.Fatalf("holding no slot, the cache holds %d objects of slots %v", n, slots)
			}
			steps := []struct {
				acquire, release []int
				want             []int
			}{
				{acquire: []int{0, 1}, want: []int{0, 1}},
				{release: []int{0}, want: []int{1}},
				{acquire: []int{2, 3}, want: []int{1, 2, 3}},
			}
			for _, step := range steps {
				for _, s := range step.release {
					if err := r.releaseSlot(context.Background(), s); err != nil {
						t.Fatal(err)
					}
				}
				if step.acquire != nil {
					r.acquire(step.acquire)
				}
				want := 0
				for _, s := range step.want {
					want += perSlot[s]
				}
				eventually(t, "the cache holds the acquired slots' objects", func() bool {
					slots, n := cachedSlots(c, count)
					return slices.Equal(slots, step.want) && n == want
				})
				eventually(t, "the acquired slots' objects are handled", func() bool {
					mu.Lock()
					defer mu.Unlock()
					for i := range pods {
						p := shardedPod(i)
						if _, ok := handled[p.Name]; !ok && slices.Contains(step.acquire, SlotOf(p.UID, count)) {
							return false
						}
					}
					return true
				})
			}
			mu.Lock()
			defer mu.Unlock()
			if len(outside) > 0 {
				t.Errorf("handled %q outside the acquired slots", outside)
			}
		})
	}
}

// recordingRetriever records the options of each call and hands out
// watches the test ends.
type recordingRetriever struct {
	mu      sync.Mutex
	calls   []metav1.ListOptions
	watches []*watch.FakeWatcher
}

func (r *recordingRetriever) List(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, opts)
	return &corev1.PodList{}, nil
}

func (r *recordingRetriever) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, opts)
	w := watch.NewFakeWithChanSize(1, false)
	r.watches = append(r.watches, w)
	return w, nil
}

func (r *recordingRetriever) last() metav1.ListOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[len(r.calls)-1]
}

// expiredNext reports whether the next event of w is the 410 Expired
// error that has client-go's reflector list again, and w then closes.
func expiredNext(t *testing.T, w watch.Interface) bool {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok || e.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(e.Object)) {
			return false
		}
	case <-time.After(5 * time.Second):
		return false
	}
	select {
	case _, ok := <-w.ResultChan():
		return !ok
	case <-time.After(5 * time.Second):
		return false
	}
}

// The decorated Retriever asks for the acquired slots server-side, and
// keeps a list's share until its watch: a watch whose share is not the
// list's ends at once, and a watch open when the share changes ends, both
// with 410 Expired; the pages of one list keep its first page's share.
// Client-side, it asks for everything and ends nothing.
func TestTheRetrieverFollowsTheAcquiredSlots(t *testing.T) {
	ctx := context.Background()
	r := newRunner(t, 4)
	next := &recordingRetriever{}
	d := r.Retriever(next).(*shardRetriever)
	r.mode.Store(ModeServerSide)
	r.acquire([]int{1})

	if _, err := d.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := next.last().ShardSelector, slotSelector([]int{1}, 4); got != want {
		t.Fatalf("list selector %q, want %q", got, want)
	}
	r.acquire([]int{2})
	if _, err := d.List(ctx, metav1.ListOptions{Continue: "page-2"}); err != nil {
		t.Fatal(err)
	}
	if got, want := next.last().ShardSelector, slotSelector([]int{1}, 4); got != want {
		t.Errorf("second page's selector %q, want the first page's %q", got, want)
	}
	w, err := d.Watch(ctx, metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	if !expiredNext(t, w) {
		t.Error("a watch after a list of another share does not end with 410 Expired")
	}

	// A streamed list takes the current share, and its watch ends when the
	// share changes.
	w, err = d.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := next.last().ShardSelector, slotSelector([]int{1, 2}, 4); got != want {
		t.Fatalf("watch-list selector %q, want %q", got, want)
	}
	next.watches[0].Add(shardedPod(1))
	if e := <-w.ResultChan(); e.Type != watch.Added {
		t.Fatalf("got event %v, want the watch's Added", e.Type)
	}
	if err := r.releaseSlot(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !expiredNext(t, w) {
		t.Error("an open watch does not end with 410 Expired when a slot is released")
	}
	w.Stop()
	if !next.watches[0].IsStopped() {
		t.Error("the watch it wrapped is not stopped")
	}

	// A plain watch of the listed share passes through, and stays open
	// while the share does not change.
	if _, err := d.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err = d.Watch(ctx, metav1.ListOptions{ResourceVersion: "11"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := next.last().ShardSelector, slotSelector([]int{2}, 4); got != want {
		t.Fatalf("watch selector %q, want %q", got, want)
	}
	r.relist()
	select {
	case e := <-w.ResultChan():
		t.Fatalf("got %v from a watch whose share did not change", e)
	case <-time.After(50 * time.Millisecond):
	}
	w.Stop()

	// Client-side: every object, and nothing ends.
	c := newRunner(t, 4)
	next = &recordingRetriever{}
	d = c.Retriever(next).(*shardRetriever)
	c.mode.Store(ModeClientSide)
	if _, err := d.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	c.acquire([]int{0})
	w, err = d.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, opts := range next.calls {
		if opts.ShardSelector != "" {
			t.Errorf("client-side call with selector %q", opts.ShardSelector)
		}
	}
	if _, ok := w.(*watch.FakeWatcher); !ok {
		t.Errorf("client-side, the watch is wrapped (%T)", w)
	}
}

// Run's detection: a server that applies the selector echoes it in
// metadata.shardInfo; one without the gate does not.
func TestDetectServerSharding(t *testing.T) {
	store := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	if _, err := store.Add(shardedPod(1)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		r    controller.Retriever
		want bool
	}{
		{"with the gate", shardFilter{store}, true},
		{"without", store, false},
	} {
		got, err := detectServerSharding(context.Background(), tt.r)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

// The decorated Retriever forwards whether it can stream an initial list:
// hiding it would have an informer over a fake clientset wait for ever.
func TestTheRetrieverForwardsWatchListSupport(t *testing.T) {
	r := newRunner(t, 2)
	for _, disable := range []bool{false, true} {
		d := r.Retriever(fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{DisableWatchList: disable}))
		if got := d.(interface{ IsWatchListSemanticsUnSupported() bool }).IsWatchListSemanticsUnSupported(); got != disable {
			t.Errorf("DisableWatchList %v: got %v", disable, got)
		}
	}
}
