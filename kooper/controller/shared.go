package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// SharedConfig configures a Shared. Retriever is required.
type SharedConfig struct {
	// Retriever lists and watches the resource type the controllers
	// sharing the cache handle. Required.
	Retriever Retriever
	// Transform is Config.Transform for the shared cache: the controllers
	// sharing it must leave theirs unset.
	Transform cache.TransformFunc
	// KeepManagedFields is Config.KeepManagedFields for the shared cache:
	// the controllers sharing it must leave theirs unset.
	KeepManagedFields bool
	// WatchIdleTimeout is Config.WatchIdleTimeout for the shared cache's
	// watch. Default 3 minutes; negative: never.
	WatchIdleTimeout time.Duration
}

// Shared is a Retriever whose cache is shared by every controller given it
// as Config.Retriever: one watch on the API server and one copy of each
// object in memory, instead of one per controller. Each controller still
// has its own queue, workers, handler, resync interval and retries, and is
// started and stopped on its own.
//
// The cache runs while at least one of its controllers runs: the first Run
// starts it, and a controller started later begins by handling every
// object already cached. When the last Run returns the cache stops; a
// later Run starts a new one.
//
// Sharing is opt-in because the controllers are then coupled: they see
// the same transformed objects, and a handler mutating a cached object
// (with DisableDeepCopy) corrupts what the others get. A Shared wrapped in
// another Retriever is no longer recognised as shared.
type Shared struct {
	cfg SharedConfig

	mu       sync.Mutex
	users    int
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	stopped  <-chan struct{}
	// onError holds each joined controller's watch error handler: a failed
	// list or watch is every one of them's failure to sync.
	onError map[cache.ResourceEventHandlerRegistration]cache.WatchErrorHandlerWithContext
}

var _ Retriever = (*Shared)(nil)

// NewShared returns a Shared over cfg.Retriever. Errors wrap
// ErrInvalidConfig.
func NewShared(cfg SharedConfig) (*Shared, error) {
	if cfg.Retriever == nil {
		return nil, fmt.Errorf("%w: a shared cache needs a retriever", ErrInvalidConfig)
	}
	if isShared(cfg.Retriever) {
		return nil, fmt.Errorf("%w: a shared cache cannot retrieve from another shared cache", ErrInvalidConfig)
	}
	return &Shared{cfg: cfg}, nil
}

// List calls the underlying Retriever's List.
func (s *Shared) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.cfg.Retriever.List(ctx, opts)
}

// Watch calls the underlying Retriever's Watch.
func (s *Shared) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.cfg.Retriever.Watch(ctx, opts)
}

// IsWatchListSemanticsUnSupported forwards the underlying Retriever's
// watch-list marker (see [WatchListUnsupported]).
func (s *Shared) IsWatchListSemanticsUnSupported() bool {
	return watchListUnsupported(s.cfg.Retriever)
}

// describe names what the underlying Retriever retrieves (see describe).
func (s *Shared) describe() string { return describe(s.cfg.Retriever) }

// watchError passes a failed list or watch to every joined controller.
func (s *Shared) watchError(ctx context.Context, r *cache.Reflector, err error) {
	s.mu.Lock()
	handlers := make([]cache.WatchErrorHandlerWithContext, 0, len(s.onError))
	for _, h := range s.onError {
		handlers = append(handlers, h)
	}
	s.mu.Unlock()
	for _, h := range handlers {
		h(ctx, r, err)
	}
}

func isShared(r Retriever) bool {
	_, ok := r.(*Shared)
	return ok
}

// resyncCheckPeriod is how often a shared cache checks whether one of its
// controllers is due a resync. Each controller asks for its own interval
// when it joins, but client-go cannot shorten the check period of a
// running informer, so it starts at client-go's minimum resync period.
// A check that finds nothing due costs a few comparisons.
const resyncCheckPeriod = time.Second

// join adds h to the shared cache, starting the cache if no controller is
// using it, and returns the cache, whose close removes h and stops the cache
// when h was its last user. ctx is the joining controller's Run context; the
// cache itself runs on a context of its own (keeping ctx's values),
// cancelled by the last close.
func (s *Shared) join(ctx context.Context, h cache.ResourceEventHandler, opts cache.HandlerOptions, onWatchError cache.WatchErrorHandlerWithContext) (*openCache, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == 0 {
		runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
		idle := s.cfg.WatchIdleTimeout
		if idle == 0 {
			idle = defaultWatchIdleTimeout
		}
		lw := listerWatcher{ctx: runCtx, r: s.cfg.Retriever, idle: idle}
		transform := cacheTransform(s.cfg.Transform, s.cfg.KeepManagedFields)
		informer, reg, stopped, err := startInformer(runCtx, lw, resyncCheckPeriod, transform, s.watchError, h, opts)
		if err != nil {
			stop()
			return nil, err
		}
		s.informer, s.stop, s.stopped = informer, stop, stopped
		return s.joined(informer, reg, onWatchError), nil
	}
	reg, err := s.informer.AddEventHandlerWithOptions(h, opts)
	if err != nil {
		return nil, fmt.Errorf("could not register the event handler: %w", err)
	}
	return s.joined(s.informer, reg, onWatchError), nil
}

// joined counts a new user of informer, with s.mu held, and returns its
// cache.
func (s *Shared) joined(informer cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration, onWatchError cache.WatchErrorHandlerWithContext) *openCache {
	s.users++
	if s.onError == nil {
		s.onError = map[cache.ResourceEventHandlerRegistration]cache.WatchErrorHandlerWithContext{}
	}
	s.onError[reg] = onWatchError
	var once sync.Once
	leave := func() { once.Do(func() { s.leave(informer, reg) }) }
	return &openCache{informer: informer, reg: reg, close: leave}
}

func (s *Shared) leave(informer cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration) {
	s.mu.Lock()
	// Removing fails only for a registration the informer does not know,
	// which join never hands out.
	_ = informer.RemoveEventHandler(reg)
	delete(s.onError, reg)
	s.users--
	if s.users > 0 {
		s.mu.Unlock()
		// RemoveEventHandler is documented as asynchronous: the handler
		// may still be running when it returns. ShutDownEventHandler is
		// documented to wait until it has stopped, so that no goroutine
		// of this controller outlives Run; it fails only for a
		// registration without ShutdownChan, which client-go's own never
		// lacks (TestPinShutDownEventHandlerWaitsForTheHandler fails on a
		// client-go where it does, or where it stops waiting). Outside
		// s.mu: the handler only queues keys, but never wait holding a
		// lock.
		_ = cache.ShutDownEventHandler(informer, reg)
		return
	}
	stop, stopped := s.stop, s.stopped
	s.informer, s.stop, s.stopped = nil, nil, nil
	s.mu.Unlock()
	stop()
	<-stopped
}
