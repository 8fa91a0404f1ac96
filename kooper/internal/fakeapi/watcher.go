package fakeapi

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var schemaGR = schema.GroupResource{Resource: "objects"}

// watcher is one watch: an unbounded backlog drained into an unbuffered
// result channel by one goroutine, so writers never block on slow readers.
type watcher struct {
	sel    labels.Selector
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once
	onStop func(*watcher)

	mu      sync.Mutex
	backlog []watch.Event
	wake    chan struct{} // signalled (non-blocking) when backlog grows
}

func newWatcher(ctx context.Context, sel labels.Selector, onStop func(*watcher)) *watcher {
	w := &watcher{
		sel:    sel,
		result: make(chan watch.Event),
		stop:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
		onStop: onStop,
	}
	go w.pump(ctx)
	return w
}

// filter turns a change into what a watcher with a label selector sees:
// objects entering the selection are Added, leaving it Deleted, others
// nothing (an empty event, which send drops).
func (w *watcher) filter(old runtime.Object, e watch.Event) watch.Event {
	return filterFor(w.sel, old, e)
}

func filterFor(sel labels.Selector, old runtime.Object, e watch.Event) watch.Event {
	was, is := matches(sel, old), matches(sel, e.Object)
	switch {
	case e.Type == watch.Deleted && was:
		return e
	case e.Type == watch.Deleted, !was && !is:
		return watch.Event{}
	case was && !is:
		return watch.Event{Type: watch.Deleted, Object: e.Object}
	case !was && is:
		return watch.Event{Type: watch.Added, Object: e.Object}
	}
	return e
}

func (w *watcher) send(e watch.Event) {
	if e.Type == "" {
		return
	}
	w.mu.Lock()
	w.backlog = append(w.backlog, e)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) pump(ctx context.Context) {
	defer close(w.result)
	defer w.Stop()
	for {
		w.mu.Lock()
		batch := w.backlog
		w.backlog = nil
		w.mu.Unlock()
		for _, e := range batch {
			// Every receiver gets its own copy, as from a real server.
			e.Object = e.Object.DeepCopyObject()
			select {
			case w.result <- e:
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-w.wake:
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Stop ends the watch; ResultChan is closed soon after.
func (w *watcher) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.onStop(w)
	})
}

// ResultChan returns the watch's events.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }
