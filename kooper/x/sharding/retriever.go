package sharding

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
)

// Retriever returns next decorated for this replica's share, for a
// sharded controller's Config.Retriever:
//
//   - server-side, its lists and watches carry the ListOptions.ShardSelector
//     of the acquired slots, so the API server sends, and the controller's
//     cache holds, their objects only. When the acquired slots change, the
//     open watch moves to the new share without ending: the cache drops
//     the objects of the released slots and gets those of the acquired
//     ones, which are queued, without listing again (see "Moving a watch"
//     below);
//   - client-side, and until Run has detected the mode, every object is
//     retrieved, as next does; the slot gate (Handler) handles the share.
//
// Give it to one sharded controller only, never to a source
// (controller.Owns, Watches): children are not sharded. It forwards next's
// answer to client-go's question whether it can stream an initial list,
// but hides the rest of next from the controller: wrap the decorated
// Retriever, not next, with controller.WithWatchIdleTimeout.
//
// # Moving a watch
//
// client-go's reflector waits its backoff before every list (0.8 s, but
// doubling with each list within two minutes, up to 30 s): a watch ended
// at each move (a 410 Expired error, so that the reflector lists again
// with the new selector) made a slot taken after a SIGKILL wait up to half
// a minute more before its objects reached the taker's cache. So the
// watch the reflector reads stays open across a move, and only the watch
// it reads from (the upstream watch) is replaced, an "in-stream relist":
//
//  1. the upstream watch is stopped, and a new one opened with the new
//     selector and SendInitialEvents (ResourceVersionMatch NotOlderThan
//     the last version the cache is known to be consistent at, with
//     bookmarks): the API server sends every object of the new share as
//     ADDED, then a bookmark annotated metav1.InitialEventsAnnotationKey;
//  2. the ADDED events are forwarded: the reflector applies one for an
//     object its cache holds as an update, which the controller queues as
//     a resync if the version did not change (low priority), and the
//     objects of the acquired slots as adds, which it queues;
//  3. at the bookmark, a DELETED event is sent for every object the cache
//     holds that the initial events did not contain (those of the released
//     slots, and those deleted during the move), then the bookmark,
//     without its annotation unless the reflector is streaming its own
//     initial list (it replaces its store at that bookmark; in a plain
//     watch it would ignore the annotation).
//
// For step 3 the retriever keeps, by key, the objects it handed to the
// cache (the List answers, the watch events forwarded since): the very
// objects the cache holds, so the cost is a map entry per object. A list,
// or a streamed initial list, that the reflector starts itself starts it
// afresh. Until the bookmark the cache's content is a mix of shares: a
// watch the reflector opens again before it (the upstream closed, the
// idle timeout) moves again from the reflector's version.
// TestPinTheReflectorTakesAnInStreamRelist pins the reflector behaviour
// this relies on.
//
// A move still ends the watch with 410 Expired, and the reflector lists
// again after its backoff, where nothing else is right: next says it
// cannot stream an initial list (a fake clientset), or the API server
// refuses the new watch.
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
	// held is what the cache holds, as this retriever handed it over,
	// since the reflector last listed (server-side only).
	held *held
	// complete says that held holds every object of the share listed,
	// and nothing else: the last list, or the last initial events, were
	// of that share, and no move has begun since. A watch opened while it
	// is not so moves at once.
	listed   selection
	complete bool
	// open are the watches open.
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

// streams reports whether next can stream an initial list: a watch can
// then move in-stream.
func (s *shardRetriever) streams() bool {
	return !watchlist.DoesClientNotSupportWatchListSemantics(s.next)
}

func (s *shardRetriever) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	sel := s.current()
	if opts.Continue != "" && s.complete {
		sel = s.listed // the next page of a list: the first page's share
	} else if sel.filter {
		s.held, s.listed, s.complete = newHeld(), sel, true
	}
	h := s.held
	s.mu.Unlock()
	sel.apply(&opts)
	list, err := s.next.List(ctx, opts)
	if err != nil || !sel.filter {
		return list, err
	}
	return h.addList(list)
}

func (s *shardRetriever) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	initial := ptr.Deref(opts.SendInitialEvents, false)
	s.mu.Lock()
	sel := s.current()
	if !sel.filter {
		s.mu.Unlock()
		return s.next.Watch(ctx, opts)
	}
	moving := initial
	switch {
	case initial: // the reflector lists, streamed
		s.held, s.complete = newHeld(), false
	case s.held != nil && s.complete && s.listed == sel:
	case !s.streams():
		s.mu.Unlock()
		return expiredWatch(), nil
	default: // the share changed since the cache listed, or a move was cut short
		moving = true
		if s.held == nil {
			s.held = newHeld()
		}
		s.complete = false
	}
	h := s.held
	s.mu.Unlock()

	wctx, cancel := context.WithCancel(ctx)
	up := opts
	if moving {
		up = moveOptions(opts, sel, opts.ResourceVersion)
	} else {
		sel.apply(&up)
	}
	w, err := s.next.Watch(wctx, up)
	if err != nil {
		cancel()
		return nil, err
	}
	sw := &shardWatch{
		r: s, ctx: wctx, cancel: cancel, opts: opts, held: h,
		up: w, sel: sel, rv: opts.ResourceVersion, moving: moving, initial: initial, seen: map[string]struct{}{},
		out: make(chan watch.Event), moved: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	sw.moved <- struct{}{} // the share may have changed since sel was read
	s.mu.Lock()
	s.open[sw] = struct{}{}
	s.mu.Unlock()
	go sw.run()
	return sw, nil
}

// moveOptions returns the options of an upstream watch that streams the
// objects of sel, from a version not older than rv, then their changes:
// opts' (the reflector's) with sel's selector and initial events.
func moveOptions(opts metav1.ListOptions, sel selection, rv string) metav1.ListOptions {
	sel.apply(&opts)
	opts.SendInitialEvents = ptr.To(true)
	opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	opts.ResourceVersion = rv
	opts.AllowWatchBookmarks = true
	return opts
}

// forget drops a stopped watch.
func (s *shardRetriever) forget(w *shardWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, w)
}

// changed tells the open watches that the acquired slots changed: each
// moves to the current share (see Retriever).
func (s *shardRetriever) changed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.open {
		select {
		case w.moved <- struct{}{}:
		default: // told already
		}
	}
}

// began records that a move began: held no longer holds one share only.
func (s *shardRetriever) began(h *held) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == h {
		s.complete = false
	}
}

// ended records that held now holds the whole of sel, and only it.
func (s *shardRetriever) ended(h *held, sel selection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == h {
		s.listed, s.complete = sel, true
	}
}

// IsWatchListSemanticsUnSupported forwards next's answer (see
// controller.WithoutWatchList): hiding it would have an informer over a
// fake clientset wait for ever.
func (s *shardRetriever) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(s.next)
}

// held is what a controller's cache holds by key, as a retriever handed it
// over: the very objects, not copies. Safe for concurrent use: the
// goroutine of a watch the reflector has stopped may still undo what it
// recorded while the reflector lists again.
type held struct {
	mu   sync.Mutex
	objs map[string]runtime.Object
}

func newHeld() *held { return &held{objs: map[string]runtime.Object{}} }

// addList records the items of list, one page of a list, and returns them
// in a *metav1.List for the reflector: it then caches the very objects
// recorded, without copying them again.
func (h *held) addList(list runtime.Object) (runtime.Object, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("could not read the list metadata of %T: %w", list, err)
	}
	items, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return nil, fmt.Errorf("could not read the items of %T: %w", list, err)
	}
	out := &metav1.List{
		ListMeta: metav1.ListMeta{ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue(), RemainingItemCount: lm.GetRemainingItemCount()},
		Items:    make([]runtime.RawExtension, 0, len(items)),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, obj := range items {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			h.objs[key] = obj
		}
		out.Items = append(out.Items, runtime.RawExtension{Object: obj})
	}
	return out, nil
}

// swap records obj under key (nil: removes it) and returns what was there.
func (h *held) swap(key string, obj runtime.Object) (prev runtime.Object) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev = h.objs[key]
	if obj == nil {
		delete(h.objs, key)
	} else {
		h.objs[key] = obj
	}
	return prev
}

// undo puts prev back under key if key still holds what swap put there:
// the event was not forwarded after all.
func (h *held) undo(key string, obj, prev runtime.Object) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.objs[key] != obj {
		return // recorded since by a newer watch
	}
	if prev == nil {
		delete(h.objs, key)
	} else {
		h.objs[key] = prev
	}
}

// keysBut returns the keys held that are not in seen.
func (h *held) keysBut(seen map[string]struct{}) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []string
	for k := range h.objs {
		if _, ok := seen[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// expiredEvent is the error event that ends a watch that cannot move to
// the new share: the reflector lists again.
func expiredEvent(why string) watch.Event {
	status := apierrors.NewResourceExpired("sharding: the acquired slots changed; list again: " + why).Status()
	return watch.Event{Type: watch.Error, Object: &status}
}

// expiredWatch returns a watch that ends at once with expiredEvent.
func expiredWatch() watch.Interface {
	ch := make(chan watch.Event, 1)
	ch <- expiredEvent("the retriever cannot stream an initial list")
	close(ch)
	return doneWatch(ch)
}

// doneWatch is a watch whose events are all sent already.
type doneWatch <-chan watch.Event

func (w doneWatch) ResultChan() <-chan watch.Event { return w }
func (doneWatch) Stop()                            {}

// shardWatch is the watch the reflector reads: it forwards the upstream
// watch's events, and moves to the current share when told (moved), until
// it is stopped or the upstream watch ends.
type shardWatch struct {
	r *shardRetriever
	// ctx bounds the upstream watches; cancel is called by Stop.
	ctx    context.Context
	cancel context.CancelFunc
	// opts are the reflector's options.
	opts metav1.ListOptions
	held *held

	// Touched by run only.
	up  watch.Interface
	sel selection
	// rv is the last version forwarded at which the cache is consistent:
	// where a move streams from.
	rv string
	// moving: up streams initial events, whose keys are seen, until the
	// bookmark that ends them.
	moving bool
	seen   map[string]struct{}
	// initial: the reflector asked for initial events and has not had
	// the bookmark that ends them.
	initial bool

	out   chan watch.Event
	moved chan struct{}
	// stop is closed by Stop.
	stop     chan struct{}
	stopOnce sync.Once
}

func (s *shardWatch) ResultChan() <-chan watch.Event { return s.out }

func (s *shardWatch) Stop() {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.cancel()
		s.r.forget(s)
	})
}

func (s *shardWatch) run() {
	defer close(s.out)
	defer func() {
		if s.up != nil {
			s.up.Stop()
		}
	}()
	for {
		select {
		case <-s.stop:
			return
		case <-s.moved:
			if !s.move() {
				return
			}
		case ev, ok := <-s.up.ResultChan():
			if !ok {
				return // the reflector watches again
			}
			if !s.forward(ev) {
				return
			}
		}
	}
}

// move replaces the upstream watch with one of the current share, unless
// the share is the watch's; false if the watch ended.
func (s *shardWatch) move() bool {
	cur := s.r.current()
	if cur == s.sel || !cur.filter {
		return true
	}
	if !s.r.streams() {
		s.send(expiredEvent("the retriever cannot stream an initial list"))
		return false
	}
	s.up.Stop()
	s.up = nil
	s.r.began(s.held)
	w, err := s.r.next.Watch(s.ctx, moveOptions(s.opts, cur, s.rv))
	if err != nil {
		if s.ctx.Err() == nil {
			s.send(expiredEvent(fmt.Sprintf("could not watch the new share: %v", err)))
		}
		return false
	}
	s.up, s.sel, s.moving, s.seen = w, cur, true, map[string]struct{}{}
	return true
}

// forward passes ev on, recording what the cache holds; at the bookmark
// that ends a move's initial events, it first deletes what the cache holds
// that they did not contain. False if the watch was stopped.
func (s *shardWatch) forward(ev watch.Event) bool {
	if ev.Type == watch.Error {
		return s.send(ev)
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return s.send(ev) // the reflector says what it thinks of it
	}
	if ev.Type == watch.Bookmark {
		if s.moving && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			return s.endMove(ev, m.GetResourceVersion())
		}
		if !s.moving {
			s.rv = m.GetResourceVersion()
		}
		return s.send(ev)
	}
	key, err := cache.MetaNamespaceKeyFunc(ev.Object)
	if err != nil {
		return s.send(ev)
	}
	rec := ev.Object
	if ev.Type == watch.Deleted {
		rec = nil
	}
	prev := s.held.swap(key, rec)
	if !s.send(ev) {
		s.held.undo(key, rec, prev)
		return false
	}
	switch {
	case s.moving && rec != nil:
		s.seen[key] = struct{}{}
	case s.moving:
		delete(s.seen, key)
	default:
		s.rv = m.GetResourceVersion()
	}
	return true
}

// endMove sends a DELETED event for every object held that the initial
// events did not contain, then the bookmark that ended them (bm), at
// version rv.
func (s *shardWatch) endMove(bm watch.Event, rv string) bool {
	for _, key := range s.held.keysBut(s.seen) {
		prev := s.held.swap(key, nil)
		if prev == nil {
			continue
		}
		if !s.send(watch.Event{Type: watch.Deleted, Object: prev}) {
			s.held.undo(key, nil, prev)
			return false
		}
	}
	if !s.initial {
		// Not the end of the reflector's own initial list: a plain bookmark.
		bm.Object = bm.Object.DeepCopyObject()
		if m, err := meta.Accessor(bm.Object); err == nil {
			ann := m.GetAnnotations()
			delete(ann, metav1.InitialEventsAnnotationKey)
			m.SetAnnotations(ann)
		}
	}
	if !s.send(bm) {
		return false
	}
	s.initial, s.moving, s.seen, s.rv = false, false, nil, rv
	s.r.ended(s.held, s.sel)
	return true
}

// send passes ev to the reflector; false if the watch was stopped first.
func (s *shardWatch) send(ev watch.Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-s.stop:
		return false
	}
}

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
