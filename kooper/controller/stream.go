package controller

import (
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Handling during the initial sync (Config.HandleDuringSync).
//
// client-go's reflector keeps the objects of a streamed initial list in a
// store of its own and hands them to the cache all at once, when the
// stream's last bookmark arrives. To handle objects as they stream in, the
// controller taps the stream of its first watch-list: each object that
// arrives is transformed as the cache would (in place, before the reflector
// sees it, so no copy is made), remembered and its key queued. A worker
// handles a key from the cache, or from the objects remembered while the
// cache has not got them yet. The cache's own transform skips objects the
// tap already transformed, so that it never runs on an object a worker may
// be reading: that holds whatever client-go does, since the cache's
// transform can only reach a tapped object if client-go hands it that very
// object, which the skip recognises. That the transform also runs once per
// object, not once more on a copy, rests on client-go handing the cache's
// transform the objects of the watch themselves, which it does not promise:
// TestPinTheCacheTransformGetsTheWatchedObjects fails on a client-go that
// copies them. When the cache then adds an object
// at the version already queued, its key is not queued again: an object is
// handled once for the initial list.

// early holds the objects of the initial stream the cache has not added
// yet, by key, until the cache has synced.
type early struct {
	transform cache.TransformFunc
	queue     func(key string)
	objects   sync.Map // key -> runtime.Object, transformed
	// transformed holds the objects the tap transformed, until the cache
	// syncs, so that the cache's transform skips them. It is keyed by the
	// object itself (a pointer): client-go 0.37's reflector hands the
	// cache's transform the very objects the tap passed on (pinned; a copy
	// is transformed again, harmlessly, as Config.Transform is idempotent).
	transformed sync.Map // any (the object) -> struct{}
	// done is set once the cache has synced: nothing is tapped or
	// remembered any more.
	done atomic.Bool
}

// arrived transforms obj, remembers it and queues its key. It returns the
// object the reflector must get instead of obj.
func (e *early) arrived(obj runtime.Object) runtime.Object {
	var out any = obj
	if e.transform != nil {
		var err error
		if out, err = e.transform(obj); err != nil {
			return obj // the cache's transform reports the same error
		}
	}
	ro, ok := out.(runtime.Object)
	if !ok {
		return obj
	}
	e.transformed.Store(out, struct{}{})
	key, err := cache.MetaNamespaceKeyFunc(ro)
	if err != nil {
		return ro // the cache's own add reports it
	}
	e.objects.Store(key, ro)
	e.queue(key)
	return ro
}

// cacheTransform wraps the cache's transform so that it skips the objects
// the tap already transformed.
func (e *early) cacheTransform(transform cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if _, done := e.transformed.Load(obj); done {
			return obj, nil
		}
		return transform(obj)
	}
}

// get returns the object remembered for key, if any.
func (e *early) get(key string) (runtime.Object, bool) {
	got, ok := e.objects.Load(key)
	if !ok {
		return nil, false
	}
	return got.(runtime.Object), true
}

// added is called when the cache adds obj; it reports whether obj's key
// was already queued at that version, and forgets the object.
func (e *early) added(key string, obj any) bool {
	got, ok := e.objects.LoadAndDelete(key)
	if !ok {
		return false
	}
	a, okA := got.(metav1.Object)
	b, okB := obj.(metav1.Object)
	return okA && okB && a.GetResourceVersion() == b.GetResourceVersion()
}

// synced forgets everything once the cache holds every object.
func (e *early) synced() {
	e.done.Store(true)
	e.objects.Clear()
	e.transformed.Clear() // the cache's transform keeps e
}

// skipTapped passes the cache's events on to next, except the addition of
// an object the tap already queued at that version: an object is handled
// once for the initial list.
type skipTapped struct {
	next  cache.ResourceEventHandler
	early *early
}

func (s skipTapped) OnAdd(obj any, isInInitialList bool) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil && s.early.added(key, obj) {
		return
	}
	s.next.OnAdd(obj, isInInitialList)
}

func (s skipTapped) OnUpdate(oldObj, newObj any) { s.next.OnUpdate(oldObj, newObj) }
func (s skipTapped) OnDelete(obj any)            { s.next.OnDelete(obj) }

// tapInitialEvents wraps w, the watch of a streamed initial list, and
// calls onObject with each object added before the bookmark that ends the
// initial events; the event carries the object onObject returns. Events
// reach the reflector in order.
func tapInitialEvents(w watch.Interface, onObject func(runtime.Object) runtime.Object) watch.Interface {
	t := &tap{in: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go t.run(onObject)
	return t
}

type tap struct {
	in       watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (t *tap) ResultChan() <-chan watch.Event { return t.out }

func (t *tap) Stop() {
	t.stopOnce.Do(func() {
		close(t.stop)
		t.in.Stop()
	})
}

func (t *tap) run(onObject func(runtime.Object) runtime.Object) {
	defer close(t.out)
	initial := true
	for ev := range t.in.ResultChan() {
		if initial {
			switch ev.Type {
			case watch.Added:
				ev.Object = onObject(ev.Object)
			case watch.Bookmark:
				if m, ok := ev.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					initial = false
				}
			}
		}
		select {
		case t.out <- ev:
		case <-t.stop:
			return
		}
	}
}
