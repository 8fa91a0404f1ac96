package sharding

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"

	"github.com/kooperkit/kooper/kooper/controller"
)

// Retriever returns next decorated for this replica's share, for a
// sharded controller's Config.Retriever:
//
//   - server-side, its lists and watches carry the ListOptions.ShardSelector
//     of the acquired slots, so the API server sends, and the controller's
//     cache holds, their objects only. When the acquired slots change, the
//     open watch ends with a 410 Expired error, as when the API server has
//     compacted the version it watches from: client-go's reflector lists
//     again, with the new selector, and the cache drops the objects of the
//     released slots and gets those of the acquired ones, which are
//     queued. The reflector waits its backoff first: 0.8 s to 1.6 s, but
//     doubling with each list within two minutes, up to 30 s;
//   - client-side, and until Run has detected the mode, every object is
//     retrieved, as next does; the slot gate (Handler) handles the share.
//
// Give it to the sharded controllers only, never to a source
// (controller.Owns, Watches): children are not sharded. It forwards next's
// answer to client-go's question whether it can stream an initial list,
// but hides the rest of next from the controller: wrap the decorated
// Retriever, not next, with controller.WithWatchIdleTimeout.
func (r *Runner) Retriever(next controller.Retriever) controller.Retriever {
	d := &shardRetriever{next: next, share: r.share, open: map[*shardWatch]struct{}{}}
	r.wiring.Lock()
	r.retrievers = append(r.retrievers, d)
	r.wiring.Unlock()
	return d
}

// share returns the shard selector of the acquired slots, and whether the
// retrievers apply it (server-side).
func (r *Runner) share() (selector string, filter bool) {
	if r.Mode() != ModeServerSide {
		return "", false
	}
	return slotSelector(r.gate.acquired(), r.cfg.Slots), true
}

// shardRetriever is what Runner.Retriever returns.
type shardRetriever struct {
	next  controller.Retriever
	share func() (selector string, filter bool)

	mu sync.Mutex
	// listed is the share the cache's content was last listed with: that
	// of the last List of a fresh list, or of the last watch that streams
	// an initial list. A plain watch with another share would miss the
	// unchanged objects of the slots acquired since: it ends at once, and
	// the cache lists again.
	listed    selection
	hasListed bool
	// open are the watches open with the current share.
	open map[*shardWatch]struct{}
}

// selection is a share as a retriever applies it.
type selection struct {
	selector string
	filter   bool
}

func (s *shardRetriever) current() selection {
	sel, filter := s.share()
	return selection{sel, filter}
}

// apply sets opts' shard selector to sel's.
func (sel selection) apply(opts *metav1.ListOptions) {
	if sel.filter {
		opts.ShardSelector = sel.selector
	}
}

func (s *shardRetriever) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	sel := s.current()
	if opts.Continue != "" && s.hasListed {
		sel = s.listed // the next page of a list: the first page's share
	}
	s.listed, s.hasListed = sel, true
	s.mu.Unlock()
	sel.apply(&opts)
	return s.next.List(ctx, opts)
}

func (s *shardRetriever) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	s.mu.Lock()
	sel := s.current()
	if initial {
		s.listed, s.hasListed = sel, true
	} else if s.hasListed && sel != s.listed {
		s.mu.Unlock()
		return expiredWatch(), nil
	}
	s.mu.Unlock()
	sel.apply(&opts)
	w, err := s.next.Watch(ctx, opts)
	if err != nil || !sel.filter {
		return w, err
	}
	sw := newShardWatch(w, sel, s.forget)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current() != sel {
		sw.expire() // the share changed while the watch opened
		return sw, nil
	}
	s.open[sw] = struct{}{}
	return sw, nil
}

// forget drops a stopped watch.
func (s *shardRetriever) forget(w *shardWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, w)
}

// changed ends the open watches whose share is no longer the current one.
func (s *shardRetriever) changed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.current()
	for w := range s.open {
		if w.sel != cur {
			w.expire()
			delete(s.open, w)
		}
	}
}

// IsWatchListSemanticsUnSupported forwards next's answer (see
// controller.WithoutWatchList): hiding it would have an informer over a
// fake clientset wait for ever.
func (s *shardRetriever) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(s.next)
}

// expiredEvent is the error event that ends a watch whose share changed.
func expiredEvent() watch.Event {
	status := apierrors.NewResourceExpired("sharding: the acquired slots changed; list again").Status()
	return watch.Event{Type: watch.Error, Object: &status}
}

// expiredWatch returns a watch that ends at once with expiredEvent.
func expiredWatch() watch.Interface {
	ch := make(chan watch.Event, 1)
	ch <- expiredEvent()
	close(ch)
	return doneWatch(ch)
}

// doneWatch is a watch whose events are all sent already.
type doneWatch <-chan watch.Event

func (w doneWatch) ResultChan() <-chan watch.Event { return w }
func (doneWatch) Stop()                            {}

// shardWatch passes a watch's events on until it is stopped, or until
// expire ends it with expiredEvent.
type shardWatch struct {
	w   watch.Interface
	sel selection
	out chan watch.Event
	// stop is closed by Stop, expired by expire.
	stop, expired     chan struct{}
	stopOnce, expOnce sync.Once
	// stopped is told once Stop is called.
	stopped func(*shardWatch)
}

func newShardWatch(w watch.Interface, sel selection, stopped func(*shardWatch)) *shardWatch {
	s := &shardWatch{w: w, sel: sel, out: make(chan watch.Event), stop: make(chan struct{}), expired: make(chan struct{}), stopped: stopped}
	go s.run()
	return s
}

func (s *shardWatch) run() {
	defer close(s.out)
	defer s.w.Stop()
	for {
		select {
		case ev, ok := <-s.w.ResultChan():
			if !ok {
				return
			}
			select {
			case s.out <- ev:
			case <-s.stop:
				return
			case <-s.expired:
				s.sendExpired()
				return
			}
		case <-s.stop:
			return
		case <-s.expired:
			s.sendExpired()
			return
		}
	}
}

func (s *shardWatch) sendExpired() {
	select {
	case s.out <- expiredEvent():
	case <-s.stop:
	}
}

func (s *shardWatch) ResultChan() <-chan watch.Event { return s.out }

func (s *shardWatch) Stop() {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.stopped(s)
	})
}

// expire ends the watch with expiredEvent.
func (s *shardWatch) expire() { s.expOnce.Do(func() { close(s.expired) }) }

// detectServerSharding reports whether the API server filters next's
// lists by ListOptions.ShardSelector (its ShardedListAndWatch feature gate
// is on): it lists one object with a selector of the whole hash space,
// and the server echoes the selector in the list's metadata.shardInfo only
// when it applied it. A server without the gate ignores the field.
func detectServerSharding(ctx context.Context, next controller.Retriever) (bool, error) {
	list, err := next.List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: slotSelector([]int{0}, 1)})
	if err != nil {
		return false, fmt.Errorf("could not list to detect server-side sharding: %w", err)
	}
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		_, found, _ := unstructured.NestedFieldNoCopy(l.Object, "metadata", "shardInfo")
		return found, nil
	case metav1.ListMetaAccessor:
		if lm, ok := l.GetListMeta().(*metav1.ListMeta); ok {
			return lm.ShardInfo != nil, nil
		}
	}
	return false, fmt.Errorf("could not read the list metadata of %T", list)
}
