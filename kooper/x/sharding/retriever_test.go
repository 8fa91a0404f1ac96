package sharding

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

// Server-side, the cache holds the objects of the acquired slots only:
// whenever they change, it drops the released slots' objects and gets and
// handles the acquired ones'. None is ever handled outside them. With a
// Retriever that streams, the reflector never lists or watches again: the
// watch moves in-stream; with one that cannot, it lists again.
func TestServerSideCachesOnlyTheAcquiredSlots(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			var calls atomic.Int64
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
			c := startCounting(t, r, ModeServerSide, controller.Config{Name: "c", Retriever: shardFilter{store}, Handler: h}, &calls)
			eventually(t, "the cache syncs", c.HasSynced)
			synced := calls.Load()
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
			again := calls.Load() - synced
			switch {
			case !mode.opts.DisableWatchList && again != 0:
				t.Errorf("the reflector listed or watched again %d times across %d moves, want 0: the watch moves in-stream", again, len(steps))
			case mode.opts.DisableWatchList && again == 0:
				t.Error("the reflector never listed again with a Retriever that cannot stream: the moves were not seen")
			}
		})
	}
}

// recordingRetriever is a fake next Retriever: List answers the pods of
// list at version listRV, and each Watch hands out a watch the test drives.
// It records the options of each call.
type recordingRetriever struct {
	list   []*corev1.Pod
	listRV string
	// noStream says it cannot stream an initial list; refuse has it refuse
	// watches that ask for one.
	noStream, refuse bool

	mu      sync.Mutex
	calls   []metav1.ListOptions
	watches []*watch.FakeWatcher
}

func (r *recordingRetriever) List(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, opts)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: r.listRV}}
	for _, p := range r.list {
		list.Items = append(list.Items, *p)
	}
	return list, nil
}

func (r *recordingRetriever) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, opts)
	if r.refuse && ptr.Deref(opts.SendInitialEvents, false) {
		return nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
	}
	w := watch.NewFakeWithChanSize(16, false)
	r.watches = append(r.watches, w)
	return w, nil
}

func (r *recordingRetriever) IsWatchListSemanticsUnSupported() bool { return r.noStream }

func (r *recordingRetriever) last() metav1.ListOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[len(r.calls)-1]
}

// watch returns the i-th watch handed out, waiting for it.
func (r *recordingRetriever) watch(t *testing.T, i int) *watch.FakeWatcher {
	t.Helper()
	var w *watch.FakeWatcher
	eventually(t, fmt.Sprintf("watch %d is opened", i), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.watches) > i {
			w = r.watches[i]
		}
		return w != nil
	})
	return w
}

// pod is a pod named name at resourceVersion rv.
func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// bookmark is a bookmark event at rv; end: it ends initial events.
func bookmark(rv string, end bool) (watch.EventType, runtime.Object) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if end {
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return watch.Bookmark, p
}

// nextEvent reads w's next event as "ADDED a rv=1", "BOOKMARK rv=8 end=",
// "ERROR Expired" or "CLOSED".
func nextEvent(t *testing.T, w watch.Interface) string {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			return "CLOSED"
		}
		if e.Type == watch.Error {
			return "ERROR " + string(apierrors.ReasonForError(apierrors.FromObject(e.Object)))
		}
		m := e.Object.(metav1.Object)
		if e.Type == watch.Bookmark {
			return fmt.Sprintf("BOOKMARK rv=%s end=%s", m.GetResourceVersion(), m.GetAnnotations()[metav1.InitialEventsAnnotationKey])
		}
		return fmt.Sprintf("%s %s rv=%s", e.Type, m.GetName(), m.GetResourceVersion())
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return ""
	}
}

// expect reads len(want) events of w; the events of each inner slice may
// come in any order.
func expect(t *testing.T, w watch.Interface, want ...[]string) {
	t.Helper()
	for _, group := range want {
		var got []string
		for range group {
			got = append(got, nextEvent(t, w))
		}
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(group))
		if !slices.Equal(got, sorted) {
			t.Fatalf("got events %q, want %q", got, sorted)
		}
	}
}

func one(events ...string) [][]string {
	var out [][]string
	for _, e := range events {
		out = append(out, []string{e})
	}
	return out
}

// checkMove checks the options of an upstream watch of a move: the new
// selector, streamed initial events not older than rv, bookmarks.
func checkMove(t *testing.T, opts metav1.ListOptions, slots []int, rv string) {
	t.Helper()
	want := metav1.ListOptions{
		ShardSelector: slotSelector(slots, 4), SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, ResourceVersion: rv, AllowWatchBookmarks: true,
	}
	if !equality.Semantic.DeepEqual(opts, want) {
		t.Fatalf("the move's watch has options %+v, want %+v", opts, want)
	}
}

// serverSide returns a Runner of 4 slots, server-side, holding slots, and
// its Retriever over next.
func serverSide(t *testing.T, next controller.Retriever, slots ...int) (*Runner, *shardRetriever) {
	t.Helper()
	r := newRunner(t, 4)
	d := r.Retriever(next).(*shardRetriever)
	r.mode.Store(ModeServerSide)
	r.acquire(slots)
	return r, d
}

// The decorated Retriever asks for the acquired slots server-side; the
// pages of one list keep its first page's share. Client-side, it asks for
// everything and hands out next's watch.
func TestTheRetrieverAsksForTheAcquiredSlots(t *testing.T) {
	ctx := context.Background()
	next := &recordingRetriever{listRV: "5"}
	r, d := serverSide(t, next, 1)
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

	// Client-side: every object, and next's own watch.
	c := newRunner(t, 4)
	next = &recordingRetriever{}
	cd := c.Retriever(next).(*shardRetriever)
	c.mode.Store(ModeClientSide)
	if _, err := cd.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	c.acquire([]int{0})
	w, err := cd.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
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

// When the acquired slots change, the watch the reflector reads stays
// open: its upstream watch is replaced by one of the new share that
// streams its objects from the last version forwarded; they are forwarded,
// then a DELETED event for each object forwarded before that they did not
// contain (released slots, deleted meanwhile), then the bookmark without
// its annotation. Changes follow as before.
func TestAWatchMovesToTheNewShareInStream(t *testing.T) {
	ctx := context.Background()
	next := &recordingRetriever{list: []*corev1.Pod{pod("a", "1"), pod("b", "2")}, listRV: "5"}
	r, d := serverSide(t, next, 1)
	if _, err := d.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := d.Watch(ctx, metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if opts := next.last(); opts.SendInitialEvents != nil || opts.ShardSelector != slotSelector([]int{1}, 4) {
		t.Fatalf("a watch of the listed share has options %+v, want a plain watch of slot 1", opts)
	}
	next.watch(t, 0).Modify(pod("a", "6"))
	expect(t, w, one("MODIFIED a rv=6")...)

	// Slot 2 acquired, b deleted meanwhile: the new share has a and c.
	r.acquire([]int{2})
	up := next.watch(t, 1)
	checkMove(t, next.last(), []int{1, 2}, "6")
	if !next.watch(t, 0).IsStopped() {
		t.Error("the upstream watch of the old share is not stopped")
	}
	up.Add(pod("a", "6"))
	up.Add(pod("c", "3"))
	up.Action(bookmark("8", true))
	expect(t, w, one("ADDED a rv=6", "ADDED c rv=3", "DELETED b rv=2", "BOOKMARK rv=8 end=")...)

	// Slot 1 released: from the bookmark's version, a is gone.
	if err := r.releaseSlot(ctx, 1); err != nil {
		t.Fatal(err)
	}
	up = next.watch(t, 2)
	checkMove(t, next.last(), []int{2}, "8")
	up.Add(pod("c", "3"))
	up.Action(bookmark("9", true))
	up.Modify(pod("c", "10"))
	up.Action(bookmark("11", false))
	expect(t, w, one("ADDED c rv=3", "DELETED a rv=6", "BOOKMARK rv=9 end=", "MODIFIED c rv=10", "BOOKMARK rv=11 end=")...)

	// The share it moved to is complete: the reflector's next watch is a
	// plain one; and a share change that moves nothing keeps the watch.
	w.Stop()
	w, err = d.Watch(ctx, metav1.ListOptions{ResourceVersion: "11"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if opts := next.last(); opts.SendInitialEvents != nil || opts.ResourceVersion != "11" {
		t.Errorf("the watch after a completed move has options %+v, want a plain watch from 11", opts)
	}
	r.moveWatches()
	select {
	case e := <-w.ResultChan():
		t.Fatalf("got %v from a watch whose share did not change", e)
	case <-time.After(50 * time.Millisecond):
	}
}

// A move cut short by another starts again from the last version the cache
// was consistent at, and the objects the first one forwarded that the
// second does not contain are deleted too.
func TestAMoveDuringAMove(t *testing.T) {
	ctx := context.Background()
	next := &recordingRetriever{list: []*corev1.Pod{pod("a", "1"), pod("b", "2")}, listRV: "5"}
	r, d := serverSide(t, next, 1)
	if _, err := d.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := d.Watch(ctx, metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r.acquire([]int{2})
	up := next.watch(t, 1)
	up.Add(pod("a", "1"))
	up.Add(pod("x", "7"))
	expect(t, w, one("ADDED a rv=1", "ADDED x rv=7")...)
	r.acquire([]int{3})
	up = next.watch(t, 2)
	checkMove(t, next.last(), []int{1, 2, 3}, "5")
	up.Add(pod("a", "1"))
	up.Add(pod("y", "9"))
	up.Action(bookmark("10", true))
	expect(t, w, []string{"ADDED a rv=1"}, []string{"ADDED y rv=9"}, []string{"DELETED b rv=2", "DELETED x rv=7"}, []string{"BOOKMARK rv=10 end="})
}

// A move during the reflector's own streamed initial list keeps the
// bookmark's annotation: the reflector replaces its store at it.
func TestAMoveDuringTheInitialList(t *testing.T) {
	ctx := context.Background()
	next := &recordingRetriever{}
	r, d := serverSide(t, next, 1)
	w, err := d.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	checkMove(t, next.last(), []int{1}, "")
	next.watch(t, 0).Add(pod("a", "1"))
	expect(t, w, one("ADDED a rv=1")...)
	if err := r.releaseSlot(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.acquire([]int{2})
	up := next.watch(t, 1)
	up.Add(pod("c", "3"))
	up.Action(bookmark("4", true))
	expect(t, w, one("ADDED c rv=3", "DELETED a rv=1", "BOOKMARK rv=4 end=true")...)
	eventually(t, "the moved initial list counts as the current share's", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.listed == d.current() && d.complete
	})
}

// Where a watch cannot move in-stream, it ends with 410 Expired and the
// reflector lists again: next cannot stream an initial list, or refuses
// the move's watch. A watch opened for another share than the list's
// then ends at once.
func TestAWatchThatCannotMoveExpires(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		next *recordingRetriever
	}{
		{"next cannot stream", &recordingRetriever{noStream: true}},
		{"next refuses the move", &recordingRetriever{refuse: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, d := serverSide(t, tt.next, 1)
			if _, err := d.List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			w, err := d.Watch(ctx, metav1.ListOptions{ResourceVersion: "5"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			r.acquire([]int{2})
			expect(t, w, one("ERROR Expired", "CLOSED")...)
			w.Stop()
			if !tt.next.watch(t, 0).IsStopped() {
				t.Error("the upstream watch is not stopped")
			}
			w, err = d.Watch(ctx, metav1.ListOptions{ResourceVersion: "6"})
			switch {
			case tt.next.noStream && err == nil:
				expect(t, w, one("ERROR Expired", "CLOSED")...)
			case tt.next.noStream:
				t.Fatalf("a watch of another share than the list's: %v, want one that ends with 410", err)
			case !apierrors.IsBadRequest(err):
				t.Fatalf("a watch of another share than the list's: %v, want the refusal", err)
			}
		})
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
