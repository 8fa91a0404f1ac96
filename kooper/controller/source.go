package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/log"
)

// Where a controller's cache comes from.
//
// Run reads the same thing whatever the Config: a cacheSource opens a cache
// with the controller's event handler registered on it; the cache fills,
// says when it has synced, hands out objects by key, and is closed when Run
// returns. There are three sources, chosen once, in New:
//
//   - ownInformer: an informer of the controller's own, started by open and
//     stopped with Run's context;
//   - tappedInformer: the same, with its initial list tapped
//     (Config.HandleDuringSync): objects are queued as they stream in,
//     before the cache has them (stream.go);
//   - sharedInformer: a *Shared cache, joined by open and left by close
//     (shared.go).
type cacheSource interface {
	// open registers h (with opts) and returns the cache it is registered
	// on. The cache serves Run's context.
	open(ctx context.Context, h cache.ResourceEventHandler, opts cache.HandlerOptions) (*openCache, error)
}

// newCacheSource returns the source cfg asks for. onError receives the
// failed lists and watches; queue queues the key of an object tapped from
// the initial list.
func newCacheSource(cfg Config, onError cache.WatchErrorHandlerWithContext, queue func(key string)) cacheSource {
	if shared, ok := cfg.Retriever.(*Shared); ok {
		return sharedInformer{shared: shared, onError: onError}
	}
	own := ownInformer{
		retriever: cfg.Retriever,
		resync:    cfg.ResyncInterval,
		transform: cacheTransform(cfg.Transform, cfg.KeepManagedFields),
		onError:   onError,
		idle:      cfg.WatchIdleTimeout,
		onIdle:    idleLogger(cfg.Logger, cfg.WatchIdleTimeout),
		clock:     cfg.Clock,
	}
	if cfg.HandleDuringSync {
		return tappedInformer{own: own, queue: queue}
	}
	return own
}

// objects is what workers, List and Get read: one open cache, or the caches
// of a sharded controller's slots.
type objects interface {
	get(key string) (any, bool, error)
	keys() []string
	list() []any
}

// objectsRef holds an objects in an atomic.Pointer.
type objectsRef struct{ src objects }

// openCache is a cache a controller reads while its Run runs.
type openCache struct {
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
	// early holds the tapped objects the cache has not got yet
	// (tappedInformer only).
	early *early
	// close unregisters the handler and returns once what open started has
	// stopped. Called once Run's context is done.
	close func()
}

// get returns the object with key: from the cache, or, while the initial
// list is still streaming, from the objects tapped from it.
func (o *openCache) get(key string) (any, bool, error) {
	item, exists, err := o.informer.GetIndexer().GetByKey(key)
	if !exists && err == nil && o.early != nil {
		item, exists = o.early.get(key)
	}
	return item, exists, err
}

// list returns every object the cache holds.
func (o *openCache) list() []any { return o.informer.GetIndexer().List() }

// keys returns the key of every object the cache holds, and of those tapped
// from the initial list that it has not got yet.
func (o *openCache) keys() []string {
	keys := o.informer.GetIndexer().ListKeys()
	if o.early != nil && !o.early.done.Load() {
		o.early.objects.Range(func(key, _ any) bool {
			keys = append(keys, key.(string))
			return true
		})
	}
	return keys
}

// waitSynced waits until the cache holds the whole initial list and every
// object of it was handed to the controller's handler (true), or ctx is
// done (false). It waits on the registration's done channel: no polling.
func (o *openCache) waitSynced(ctx context.Context) bool {
	if !cache.WaitFor(ctx, "", o.reg.HasSyncedChecker()) {
		return false
	}
	if o.early != nil {
		o.early.synced() // the cache has every object now
	}
	return true
}

// ownInformer is an informer of the controller's own.
type ownInformer struct {
	retriever Retriever
	resync    time.Duration
	transform cache.TransformFunc
	onError   cache.WatchErrorHandlerWithContext
	idle      time.Duration // Config.WatchIdleTimeout
	onIdle    func()
	clock     clock.WithDelayedExecution
}

// idleLogger says that a silent watch is being restarted.
func idleLogger(logger log.Logger, idle time.Duration) func() {
	return func() {
		logger.Warn("the watch received nothing, not even a bookmark: restarting it from the last version seen", "idleFor", idle.String())
	}
}

func (s ownInformer) open(ctx context.Context, h cache.ResourceEventHandler, opts cache.HandlerOptions) (*openCache, error) {
	lw := listerWatcher{ctx: ctx, r: s.retriever, idle: s.idle, onIdle: s.onIdle, clock: s.clock}
	informer, reg, stopped, err := startInformer(ctx, lw, s.resync, s.transform, s.onError, h, opts)
	if err != nil {
		return nil, err
	}
	return &openCache{informer: informer, reg: reg, close: func() { <-stopped }}, nil
}

// tappedInformer is an ownInformer whose first streamed list is tapped, so
// that each object is queued as it arrives (see stream.go).
type tappedInformer struct {
	own   ownInformer
	queue func(key string)
}

func (s tappedInformer) open(ctx context.Context, h cache.ResourceEventHandler, opts cache.HandlerOptions) (*openCache, error) {
	e := &early{transform: s.own.transform, queue: s.queue}
	transform := s.own.transform
	if transform != nil {
		transform = e.cacheTransform(transform)
	}
	lw := listerWatcher{ctx: ctx, r: s.own.retriever, idle: s.own.idle, onIdle: s.own.onIdle, tap: func(w watch.Interface) watch.Interface {
		if e.done.Load() {
			return w // a relist after the sync goes through the cache
		}
		return tapInitialEvents(w, e.arrived)
	}}
	informer, reg, stopped, err := startInformer(ctx, lw, s.own.resync, transform, s.own.onError, skipTapped{next: h, early: e}, opts)
	if err != nil {
		return nil, err
	}
	return &openCache{informer: informer, reg: reg, early: e, close: func() { <-stopped }}, nil
}

// sharedInformer is a *Shared cache.
type sharedInformer struct {
	shared  *Shared
	onError cache.WatchErrorHandlerWithContext
}

func (s sharedInformer) open(ctx context.Context, h cache.ResourceEventHandler, opts cache.HandlerOptions) (*openCache, error) {
	return s.shared.join(ctx, h, opts, s.onError)
}

// startInformer builds an informer over lw, registers h on it before it
// starts, so that h receives the initial objects as they arrive, and runs
// it until ctx is done: stopped is closed once it has. resyncCheck is how
// often the informer checks whether a handler is due a resync. Its messages
// (a list that fails, a watch that closes) name what lw's Retriever
// retrieves.
func startInformer(ctx context.Context, lw listerWatcher, resyncCheck time.Duration, transform cache.TransformFunc, onError cache.WatchErrorHandlerWithContext, h cache.ResourceEventHandler, opts cache.HandlerOptions) (_ cache.SharedIndexInformer, _ cache.ResourceEventHandlerRegistration, stopped <-chan struct{}, _ error) {
	informer := cache.NewSharedIndexInformerWithOptions(
		lw, nil,
		// Indexers not nil: a source of another controller indexes the
		// cache later (owned.go), and client-go's store panics adding an
		// index to a nil map.
		cache.SharedIndexInformerOptions{ResyncPeriod: resyncCheck, Indexers: cache.Indexers{}, ObjectDescription: describe(lw.r)},
	)
	if transform != nil {
		if err := informer.SetTransform(transform); err != nil {
			return nil, nil, nil, fmt.Errorf("could not set the cache transform: %w", err)
		}
	}
	if err := informer.SetWatchErrorHandlerWithContext(onError); err != nil {
		return nil, nil, nil, fmt.Errorf("could not set the watch error handler: %w", err)
	}
	reg, err := informer.AddEventHandlerWithOptions(h, opts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("could not register the event handler: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	return informer, reg, done, nil
}
