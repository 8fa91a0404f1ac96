package controller

import (
	"sync"

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
// arrives is copied, transformed as the cache would, kept aside and its
// key queued. A worker handles a key from the cache, or from the objects
// kept aside while the cache has not got it yet. When the cache then
// adds an object at the version already queued, the key is not queued
// again, so an object is handled once for the initial list.

// early holds the objects of the initial stream the cache has not added
// yet, by key.
type early struct {
	transform cache.TransformFunc
	enqueue   func(key string)
	objects   sync.Map // key -> runtime.Object, transformed copy
}

// arrived keeps obj aside and queues its key.
func (e *early) arrived(obj runtime.Object) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return // the cache's own add reports it
	}
	var kept any = obj.DeepCopyObject()
	if e.transform != nil {
		if kept, err = e.transform(kept); err != nil {
			return // the cache's own add hits the same error
		}
	}
	if ro, ok := kept.(runtime.Object); ok {
		e.objects.Store(key, ro)
		e.enqueue(key)
	}
}

// get returns the object kept aside for key, if any.
func (e *early) get(key string) (runtime.Object, bool) {
	got, ok := e.objects.Load(key)
	if !ok {
		return nil, false
	}
	return got.(runtime.Object), true
}

// added is called when the cache adds obj; it reports whether obj's key
// was already queued at that version, and forgets the kept copy.
func (e *early) added(key string, obj any) bool {
	got, ok := e.objects.LoadAndDelete(key)
	if !ok {
		return false
	}
	a, okA := got.(metav1.Object)
	b, okB := obj.(metav1.Object)
	return okA && okB && a.GetResourceVersion() == b.GetResourceVersion()
}

// tapInitialEvents wraps w, the watch of a streamed initial list, and
// calls onObject with each object added before the bookmark that ends the
// initial events. Events reach the reflector unchanged and in order.
func tapInitialEvents(w watch.Interface, onObject func(runtime.Object)) watch.Interface {
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

func (t *tap) run(onObject func(runtime.Object)) {
	defer close(t.out)
	initial := true
	for ev := range t.in.ResultChan() {
		if initial {
			switch ev.Type {
			case watch.Added:
				onObject(ev.Object)
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
