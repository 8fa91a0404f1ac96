package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/log"
)

// Where a controller's cache comes from: an informer of its own over its
// Retriever (ownInformer), opened by Run with the controller's event
// handler registered on it. The cache fills, says when it has synced,
// hands out objects by key, and is closed when Run returns.

// newCacheSource returns the controller's informer. onError receives the
// failed lists and watches.
func newCacheSource(cfg Config, onError cache.WatchErrorHandlerWithContext) ownInformer {
	idle := idleTimeout(cfg.Retriever)
	return ownInformer{
		retriever: cfg.Retriever,
		resync:    cfg.ResyncInterval,
		onError:   onError,
		idle:      idle,
		onIdle:    idleLogger(cfg.Logger, idle),
		clock:     cfg.clock,
	}
}

// objects is what workers, List and Get read: the open cache.
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
	// close unregisters the handler and returns once what open started has
	// stopped. Called once Run's context is done.
	close func()
}

// get returns the object with key from the cache.
func (o *openCache) get(key string) (any, bool, error) {
	return o.informer.GetIndexer().GetByKey(key)
}

// list returns every object the cache holds.
func (o *openCache) list() []any { return o.informer.GetIndexer().List() }

// keys returns the key of every object the cache holds.
func (o *openCache) keys() []string { return o.informer.GetIndexer().ListKeys() }

// waitSynced waits until the cache holds the whole initial list and every
// object of it was handed to the controller's handler (true), or ctx is
// done (false). It waits on the registration's done channel: no polling.
func (o *openCache) waitSynced(ctx context.Context) bool {
	return cache.WaitFor(ctx, "", o.reg.HasSyncedChecker())
}

// ownInformer is an informer of the controller's own.
type ownInformer struct {
	retriever Retriever
	resync    time.Duration
	onError   cache.WatchErrorHandlerWithContext
	idle      time.Duration // WithWatchIdleTimeout
	onIdle    func()
	clock     clock.WithDelayedExecution
	// view, if not nil, learns what the cache lists and reports what it
	// has seen (writes.go).
	view *cacheView
}

// idleLogger says that a silent watch is being restarted.
func idleLogger(logger log.Logger, idle time.Duration) func() {
	return func() {
		logger.Warn("the watch received nothing, not even a bookmark: restarting it from the last version seen", "idleFor", idle.String())
	}
}

func (s ownInformer) open(ctx context.Context, h cache.ResourceEventHandler, opts cache.HandlerOptions) (*openCache, error) {
	lw := listerWatcher{ctx: ctx, r: s.retriever, idle: s.idle, onIdle: s.onIdle, clock: s.clock, view: s.view}
	informer, reg, stopped, err := startInformer(ctx, lw, s.resync, s.onError, h, opts)
	if err != nil {
		return nil, err
	}
	return &openCache{informer: informer, reg: reg, close: func() { <-stopped }}, nil
}

// startInformer builds an informer over lw, registers h on it before it
// starts, so that h receives the initial objects as they arrive, and runs
// it until ctx is done: stopped is closed once it has. resyncCheck is how
// often the informer checks whether a handler is due a resync. Its messages
// (a list that fails, a watch that closes) name what lw's Retriever
// retrieves. Objects enter the cache without their managedFields
// (dropManagedFields).
func startInformer(ctx context.Context, lw listerWatcher, resyncCheck time.Duration, onError cache.WatchErrorHandlerWithContext, h cache.ResourceEventHandler, opts cache.HandlerOptions) (_ cache.SharedIndexInformer, _ cache.ResourceEventHandlerRegistration, stopped <-chan struct{}, _ error) {
	informer := cache.NewSharedIndexInformerWithOptions(
		lw, nil,
		// Indexers not nil: a source of another controller indexes the
		// cache later (owned.go), and client-go's store panics adding an
		// index to a nil map.
		cache.SharedIndexInformerOptions{ResyncPeriod: resyncCheck, Indexers: cache.Indexers{}, ObjectDescription: describe(lw.r)},
	)
	if err := informer.SetTransform(dropManagedFields); err != nil {
		return nil, nil, nil, fmt.Errorf("could not set the cache transform: %w", err)
	}
	if err := informer.SetWatchErrorHandlerWithContext(onError); err != nil {
		return nil, nil, nil, fmt.Errorf("could not set the watch error handler: %w", err)
	}
	reg, err := informer.AddEventHandlerWithOptions(h, opts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("could not register the event handler: %w", err)
	}
	if lw.view != nil {
		lw.view.store = informer.GetIndexer()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	return informer, reg, done, nil
}

// dropManagedFields is what every object goes through before it enters a
// cache: server-side apply's bookkeeping (metadata.managedFields) is a
// large share of a typical object (about a fifth of a pod) that handlers
// rarely read, so it is dropped. Objects returned by the API server's
// write calls still carry it.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
