package controller

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kooperkit/kooper/kooper/internal/handling"
)

// Kinds a controller watches besides its own: the sources given to New.
//
// A source is a cache and an event handler, nothing more: no queue,
// workers, retries or metrics series of its own. Its handler maps each
// added, changed or deleted object to the keys of the controller's objects
// it relates to and queues them with Enqueue, in the controller's one
// queue: the handler runs for them in the controller's workers, one worker
// per key at a time, whichever kind changed. Run opens the sources before
// the controller's own cache (a source that fails to open leaves nothing
// to stop), starts the workers once they have synced, and closes them
// before it returns.

// Source is a kind a controller watches besides its own, given to New.
// Sealed: built by [Owns] or [Watches].
type Source interface {
	base() *source
}

// Watched is the cache of one kind a controller watches besides its own,
// readable from the controller's handler with Of. Build it with [Owns] or
// [Watches] and give it to one controller, with New.
type Watched[T runtime.Object] struct{ s *source }

var _ Source = (*Watched[runtime.Object])(nil)

func (w *Watched[T]) base() *source {
	if w == nil {
		return nil
	}
	return w.s
}

// Owns returns the source of the objects of type T that the controller's
// objects control (a metav1 controller reference: owner.SetController),
// retrieved by r, for New. A change to one of them, its
// deletion included, queues its owner, found in the controller's cache at
// the reference's name (in the child's namespace, or cluster-scoped) and
// queued only if its UID is the reference's: a child of a deleted owner
// re-created under the same name, or of another kind, queues nothing. No
// API call is made. r may be a metadata-only Retriever
// (T *metav1.PartialObjectMetadata) or a *Shared.
func Owns[T runtime.Object](r Retriever) *Watched[T] {
	return newWatched[T](r, ownsIndex, controllerUID, ownerKeys,
		func(owner metav1.Object) string { return string(owner.GetUID()) })
}

// Watches returns the source of the objects of type T retrieved by r,
// mapped by keys to the keys (namespace/name, or name) of the controller's
// objects they concern, for New: for kinds the controller's
// objects refer to without owning them, such as a ConfigMap a Tenant
// names. A change to one of them, its deletion included (keys then gets
// its last state), queues every key keys returns for it, and, for a
// change, every key it returned for the object before. keys must be fast,
// depend only on obj, and never modify it: it runs for each event and to
// index the cache.
func Watches[T runtime.Object](r Retriever, keys func(obj T) []string) *Watched[T] {
	if keys == nil {
		return newWatched[T](r, "", nil, nil, nil) // refused by New
	}
	typed := func(obj any) []string {
		if t, ok := obj.(T); ok {
			return keys(t)
		}
		return nil
	}
	w := newWatched[T](r, "",
		func(obj any) ([]string, error) { return typed(obj), nil },
		func(obj any, _ objects) []string { return typed(obj) },
		func(owner metav1.Object) string { return cache.MetaObjectToName(owner).String() })
	// Each Watches indexes with a keys function of its own, under a name
	// of its own: random, since the index outlives the source on a Shared
	// cache (client-go cannot remove one), so no later source may reuse it.
	w.s.index = "kooper.watches." + rand.Text()
	return w
}

// Of returns the objects of the cache that relate to owner, one of the
// controller's objects, in key order: with Owns, those whose controller
// reference has owner's UID; with Watches, those whose keys include
// owner's key. It reads an index, never the whole cache. The objects are
// the cache's own: read them, never modify them (DeepCopy first). It
// returns nil when none relates to owner, before the cache has synced and
// after Run has returned; the workers start once it has synced, so a
// handler always reads a synced cache.
func (w *Watched[T]) Of(owner metav1.Object) []T {
	if w == nil || w.s == nil || owner == nil {
		return nil
	}
	var out []T
	for _, item := range w.s.related(owner) {
		if t, ok := item.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// ownsIndex names the index of a cache by controller reference UID. Every
// Owns source computes it alike, so sources sharing a cache (*Shared)
// share it.
const ownsIndex = "kooper.owns.controller-uid"

// source is a Watched without its type: what the controller runs.
type source struct {
	retriever Retriever
	what      string // names the objects, in logs and SyncError
	kind      string // names them in the reasons they give (reason)
	isT       func(obj any) bool
	// index, computed by indexFunc, maps an owner's indexValue to the
	// objects that relate to it (Of).
	index      string
	indexFunc  cache.IndexFunc
	indexValue func(owner metav1.Object) string
	// keys returns the keys of the controller's objects obj relates to;
	// owners is the controller's own cache.
	keys func(obj any, owners objects) []string

	// bound is the controller the source was given to (New).
	bound    atomic.Pointer[Controller]
	retrieve *retrieveErrors
	// run is the open cache while Run runs; owners the controller's own
	// cache, once open.
	run    atomic.Pointer[openSource]
	owners atomic.Pointer[objectsRef]
	// wrongType is logged once: an object not of type T, which Of skips.
	wrongType sync.Once
}

func newWatched[T runtime.Object](r Retriever, index string, indexFunc cache.IndexFunc,
	keys func(any, objects) []string, indexValue func(metav1.Object) string) *Watched[T] {
	what := describe(r)
	if what == "" {
		what = reflect.TypeFor[T]().String()
	}
	kind := strings.TrimSuffix(what, " (metadata)") // a resource ("deployments.apps"), or a Go type: its name
	if strings.HasPrefix(kind, "*") {
		kind = kind[strings.LastIndex(kind, ".")+1:]
	}
	return &Watched[T]{s: &source{
		retriever: r, what: what, kind: kind,
		isT:   func(obj any) bool { _, ok := obj.(T); return ok },
		index: index, indexFunc: indexFunc, indexValue: indexValue, keys: keys,
	}}
}

// validate says what is wrong with s, for Config.validate.
func (s *source) validate() error {
	switch {
	case s.retriever == nil:
		return fmt.Errorf("%w: a source needs a retriever", ErrInvalidConfig)
	case s.keys == nil:
		return fmt.Errorf("%w: a Watches source needs a keys function", ErrInvalidConfig)
	}
	return nil
}

// bindSources gives the sources to c, each to one controller only.
func (c *Controller) bindSources() error {
	for i, src := range c.sources {
		s := src.base()
		if !s.bound.CompareAndSwap(nil, c) {
			for _, bound := range c.sources[:i] {
				bound.base().bound.Store(nil)
			}
			return fmt.Errorf("%w: source %s is already given to a controller", ErrInvalidConfig, s.what)
		}
		s.retrieve = &retrieveErrors{controller: c.cfg.Name, resource: s.what,
			log: c.log, rec: c.cfg.MetricsRecorder, clock: c.cfg.clock}
	}
	return nil
}

// openSource is a source's cache while Run runs.
type openSource struct {
	s     *source
	cache *openCache
	stop  context.CancelFunc
}

// openSources are the open sources of one Run.
type openSources []*openSource

// openSources opens the cache of every source, whose events queue keys in
// c once route has told them where c's objects are. On error, the sources
// opened are closed.
func (c *Controller) openSources(ctx context.Context) (openSources, error) {
	opened := make(openSources, 0, len(c.sources))
	for _, src := range c.sources {
		o, err := src.base().open(ctx, c)
		if err != nil {
			opened.close()
			return nil, err
		}
		opened = append(opened, o)
	}
	return opened, nil
}

// route has the sources map their objects to the objects of owners, the
// controller's own cache, just opened.
func (o openSources) route(owners objects) {
	for _, open := range o {
		open.s.owners.Store(&objectsRef{owners})
	}
}

// waitSynced waits until every source's cache has synced (true) or ctx is
// done (false).
func (o openSources) waitSynced(ctx context.Context) bool {
	for _, open := range o {
		if !cache.WaitFor(ctx, "", open.cache.reg.HasSyncedChecker()) {
			return false
		}
	}
	return true
}

// close closes every source and returns once their goroutines are gone.
func (o openSources) close() {
	for _, open := range o {
		open.s.owners.Store(nil)
		open.s.run.Store(nil)
		open.stop()
		open.cache.close()
	}
}

// open starts s's cache for c: an informer of its own, on a context of its own so that a source that fails can be
// stopped before Run's is done.
func (s *source) open(ctx context.Context, c *Controller) (*openSource, error) {
	ctx, stop := context.WithCancel(ctx)
	h := s.events(c)
	// Never resynced: the controller's own resync handles every owner
	// again, children's drift included.
	noResync := time.Duration(0)
	opts := cache.HandlerOptions{ResyncPeriod: &noResync}
	idle := idleTimeout(s.retriever)
	open, err := ownInformer{
		retriever: s.retriever,
		onError:   s.retrieve.handler(),
		idle:      idle,
		onIdle:    idleLogger(c.log.With(keyResource, s.what), idle),
		clock:     c.cfg.clock,
		view:      c.writes.view(),
	}.open(ctx, h, opts)
	if err == nil {
		err = addIndex(open.informer, s.index, s.indexFunc)
		if err != nil {
			stop()
			open.close()
		}
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("could not open the cache of %s: %w", s.what, err)
	}
	o := &openSource{s: s, cache: open, stop: stop}
	s.run.Store(o)
	return o, nil
}

// addIndex adds the index name to informer unless it has it (a shared
// cache another source indexed alike). client-go's Indexer documents that
// an index may be added to a store that already has items: they are
// indexed then.
func addIndex(informer cache.SharedIndexInformer, name string, f cache.IndexFunc) error {
	if _, ok := informer.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	err := informer.AddIndexers(cache.Indexers{name: f})
	if _, ok := informer.GetIndexer().GetIndexers()[name]; ok {
		return nil // added, by this call or by a source joining at once
	}
	if err != nil {
		return fmt.Errorf("could not index the cache: %w", err)
	}
	return nil
}

// events is what a source's cache tells the controller: the keys every
// change relates to are queued. An object of the initial list queues
// nothing (the controller's own initial list queues every object, handled
// once the sources have synced), nor does an unchanged one listed again. A
// change queues what the object related to before and after (a child
// whose controller reference moved queues both owners); a deletion, what
// its last state related to.
func (s *source) events(c *Controller) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if !isInInitialList {
				s.route(c, obj)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			if !sameVersion(oldObj, obj) {
				s.route(c, oldObj, obj)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj // deleted while the watch was down
			}
			s.route(c, obj)
		},
	}
}

// route queues, once each, the keys objs relate to.
func (s *source) route(c *Controller, objs ...any) {
	ref := s.owners.Load()
	if ref == nil {
		return
	}
	var queued []string
	for _, obj := range objs {
		if !s.isT(obj) {
			s.wrongType.Do(func() {
				c.log.Warn("a source's object is not of its type: Of skips it",
					keyResource, s.what, "type", fmt.Sprintf("%T", obj))
			})
		}
		keys := s.keys(obj, ref.src)
		if len(keys) == 0 {
			continue
		}
		why := s.reason(obj)
		for _, key := range keys {
			if !slices.Contains(queued, key) {
				queued = append(queued, key)
				c.add(key, sourceEnqueue, why)
			}
		}
	}
}

// reason is why a change of obj queues its owners: "owned" for an Owns
// source, "watched" for a Watches one, with obj's kind and key.
func (s *source) reason(obj any) handling.Reason {
	why := reasonWatched
	if s.index == ownsIndex {
		why = reasonOwned
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		why.Detail = s.kind + " " + key
	}
	return why
}

// related returns the cached objects related to owner, in key order.
func (s *source) related(owner metav1.Object) []any {
	r := s.run.Load()
	if r == nil || !r.cache.reg.HasSynced() {
		return nil
	}
	value := s.indexValue(owner)
	if value == "" {
		return nil
	}
	items, err := r.cache.informer.GetIndexer().ByIndex(s.index, value)
	if err != nil {
		return nil // no such index: open adds it before storing r
	}
	// Each key computed once, not at every comparison.
	type keyed struct {
		key  string
		item any
	}
	sorted := make([]keyed, len(items))
	for i, item := range items {
		sorted[i] = keyed{objectKey(item), item}
	}
	slices.SortFunc(sorted, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	for i, k := range sorted {
		items[i] = k.item
	}
	return items
}

// objectKey is obj's key, or "" (sorted first) for an object without
// metadata.
func objectKey(obj any) string {
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	return key
}

// controllerUID indexes an object by the UID of its controller reference.
func controllerUID(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil //nolint:nilerr // no metadata: not indexed
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.UID != "" {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// ownerKeys returns the key of obj's owner: the object of owners whose key
// is the controller reference's name (in obj's namespace for a namespaced
// owner, or cluster-scoped) and whose UID is the reference's. A UID is
// unique: the reference's kind need not be checked.
func ownerKeys(obj any, owners objects) []string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.UID == "" {
		return nil
	}
	candidates := []string{ref.Name}
	if ns := m.GetNamespace(); ns != "" {
		candidates = []string{ns + "/" + ref.Name, ref.Name}
	}
	for _, key := range candidates {
		item, exists, err := owners.get(key)
		if err != nil || !exists {
			continue
		}
		if o, err := meta.Accessor(item); err == nil && o.GetUID() == ref.UID {
			return []string{key}
		}
	}
	return nil
}

// sourcesSyncError is SyncError's answer given own, the own cache's: the
// failures of every cache that has one, joined.
func (c *Controller) sourcesSyncError(own error) error {
	errs := []error{own}
	for _, src := range c.sources {
		if r := src.base().retrieve; r != nil {
			errs = append(errs, r.lastError())
		}
	}
	errs = slices.DeleteFunc(errs, func(err error) bool { return err == nil })
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
