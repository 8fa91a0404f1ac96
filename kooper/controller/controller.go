package controller

import (
	"context"
	"fmt"
	"path"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/deadline"
	"github.com/kooperkit/kooper/kooper/internal/handling"
	"github.com/kooperkit/kooper/kooper/internal/logkey"
	"github.com/kooperkit/kooper/kooper/log"
)

// Controller keeps calling a Handler with the latest state of every object a
// Retriever lists and watches. Build one with New and start it with Run.
type Controller struct {
	cfg     Config
	sources []Source // New's (owned.go)
	handler Handler  // cfg.Handler wrapped by the controller's own middlewares
	log     log.Logger
	// source is where the cache comes from (source.go).
	source ownInformer
	ran    atomic.Bool
	synced atomic.Bool
	// queue is Run's queue, from the moment Run starts: Enqueue and the
	// cache's events add to it.
	queue atomic.Pointer[workQueue]
	// cache is Run's cache while Run runs and the cache has synced: List
	// and Get read it.
	cache atomic.Pointer[objectsRef]
	// retrieve keeps, counts and logs the failed lists and watches.
	retrieve *retrieveErrors
	// validity bounds the right to handle (SetValidUntil); gate admits
	// handlings by it (handle.go).
	validity *deadline.Deadline
	gate     gate
	// writes are what the handlings wrote, until the caches have seen it
	// (writes.go).
	writes *writes
}

// New validates cfg, applies its defaults and returns a Controller ready to
// Run. cfg is taken by value: the caller's Config is never changed. Errors
// wrap ErrInvalidConfig.
//
// sources are kinds the controller watches besides its own, built by Owns
// (the children its objects control) or Watches (any kind, mapped to keys
// by a function): each has a cache, filled from its Retriever and never
// resynced, whose every change, deletions included, queues the keys of the
// controller's objects it relates to (see "Owned kinds" in the package
// doc). The workers start once every source has synced. A source belongs
// to one controller.
func New(cfg Config, sources ...Source) (*Controller, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	for i, s := range sources {
		if s == nil || s.base() == nil {
			return nil, fmt.Errorf("%w: source %d is nil", ErrInvalidConfig, i)
		}
		if err := s.base().validate(); err != nil {
			return nil, err
		}
	}
	logger := cfg.Logger.With(logkey.Controller, cfg.Name)
	// The handler chain, outermost first:
	//  1. measure: records the duration and outcome of the whole call, so a
	//     panic counts as a failed handling;
	//  2. recoverPanics: turns a panic into an error the loop retries;
	//  3. the user's handler, with the middlewares the user chained.
	h := Chain(cfg.Handler,
		measure(cfg.MetricsRecorder, cfg.Name, cfg.clock),
		recoverPanics(cfg.MetricsRecorder, cfg.Name, logger),
	)
	retrieve := &retrieveErrors{controller: cfg.Name, resource: describe(cfg.Retriever),
		log: logger, rec: cfg.MetricsRecorder, clock: cfg.clock}
	c := &Controller{cfg: cfg, sources: slices.Clone(sources), handler: h, log: logger, retrieve: retrieve, validity: deadline.New(cfg.clock)}
	c.gate = rightToHandle{c.validity}
	c.source = newCacheSource(cfg, retrieve.handler())
	c.writes = newWrites(cfg.clock)
	c.source.view = c.writes.view()         // the first view: the controller's own cache
	if err := c.bindSources(); err != nil { // owned.go
		return nil, err
	}
	return c, nil
}

// ShutdownTimeout returns the bound on how long Run waits for running
// handlers once its context is done. Leader election reads it to check that
// an old leader stops handling before a new one can start.
func (c *Controller) ShutdownTimeout() time.Duration { return c.cfg.ShutdownTimeout }

// HasSynced reports whether Run has filled the cache, and the caches of
// its sources (New): every object listed at start is queued, and the
// workers are handling them (or, with RunWarm, start the moment this
// replica leads). It stays true after Run returns.
// Use it for a readiness check.
func (c *Controller) HasSynced() bool { return c.synced.Load() }

// SyncError returns why the cache has not synced yet: the last list or
// watch that failed since Run started, naming the controller and what its
// Retriever retrieves, and wrapping [ErrDecode] when the answer could not
// be decoded. With sources (New), the last failure of each of their
// caches too, joined. It returns nil once every cache has synced, and while
// nothing has failed. leaderelection.Runner.Ready puts it in /readyz's answer.
//
// Failures after the sync (a relist that cannot decode a changed object)
// leave the cache as it was, stale for that type: they are logged and
// counted (MetricsRecorder.IncRetrieveError), not returned here.
func (c *Controller) SyncError() error {
	if c.synced.Load() {
		return nil
	}
	return c.sourcesSyncError(c.retrieve.lastError())
}

// List returns the objects in the controller's cache, as the handler would
// get them, in no particular order, and true; or
// nil and false before the cache has synced and after Run has returned. The
// objects are the cache's own: read them, never modify them. Use it for
// what is computed over all objects at once, such as a gauge counting them
// by state at scrape time, without a call to the API server.
func (c *Controller) List() ([]runtime.Object, bool) {
	ref := c.cache.Load()
	if ref == nil {
		return nil, false
	}
	items := ref.src.list()
	objs := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(runtime.Object); ok {
			objs = append(objs, obj)
		}
	}
	return objs, true
}

// Get returns the object with key (namespace/name, or name for a
// cluster-scoped object) from the controller's cache, as the handler would
// get it, and true; or nil and false when the cache does not hold it, before
// the cache has synced and after Run has returned. The object is the cache's
// own: read it, never modify it. A source (Owns) finds a child's owner
// this way, with no call to the API server.
func (c *Controller) Get(key string) (runtime.Object, bool) {
	ref := c.cache.Load()
	if ref == nil {
		return nil, false
	}
	item, exists, err := ref.src.get(key)
	if err != nil || !exists {
		return nil, false
	}
	obj, ok := item.(runtime.Object)
	return obj, ok
}

// Enqueue queues key (namespace/name, or name for a cluster-scoped object)
// to be handled as if its object had changed: the handler gets the
// object's latest state from the cache, and a key already waiting in the
// queue is handled once. This is how a source (Owns, Watches) has an
// owner handled: the owner's handler then runs only in this controller's
// workers, never in two at once, whichever kind's change caused it.
// Enqueue never blocks. Keys enqueued before Run has started,
// while a warm standby waits to lead (RunWarm), or after Run has returned
// are dropped: the initial list, or the takeover, queues every object
// anyway. A key whose object the cache does not hold when a worker takes it
// is dropped too. The handling's reason (Reasons) is "enqueued", with
// the function that called Enqueue as its detail. Safe for concurrent use.
func (c *Controller) Enqueue(key string) {
	r := reasonEnqueued
	if pc, _, _, ok := goruntime.Caller(1); ok {
		if f := goruntime.FuncForPC(pc); f != nil {
			r.Detail = path.Base(f.Name()) // "sharding.(*Runner).acquire"
		}
	}
	c.add(key, sourceEnqueue, r)
}

// Run fills the cache from the Retriever, then handles objects with
// Config.ConcurrentWorkers workers until ctx is done. It then cancels the running handlers' contexts, waits up to
// Config.ShutdownTimeout for them and for every goroutine it started, and
// returns nil once all have returned. Otherwise it returns
// ErrShutdownTimeout, and the only goroutines it leaves are those running a
// handler that ignores its context: each ends when its handler returns,
// and schedules nothing. Keys still queued are dropped: they are handled
// again by whichever controller next lists the objects. Run may be called
// once (Run or RunWarm).
func (c *Controller) Run(ctx context.Context) error { return c.run(ctx, nil) }

// RunWarm is Run for a warm standby under leader election: it fills the
// cache and keeps it, but queues and handles nothing until leading is
// closed. It then queues the key of every cached object at once and starts
// the workers: none waits for a list, and each object is handled once at
// its latest state. Until then the queue stays empty, so a standby's queue
// length and wait times say nothing about keys it is not meant to handle.
// HasSynced turns true once the cache is filled, whether or not leading is
// closed. leaderelection.Runner calls it; Run is RunWarm with leading
// closed.
func (c *Controller) RunWarm(ctx context.Context, leading <-chan struct{}) error {
	return c.run(ctx, leading)
}

// run is Run, with workers held until leading is closed (nil: at once):
// the one loop of a controller, in four stages, each below.
func (c *Controller) run(ctx context.Context, leading <-chan struct{}) error {
	if !c.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	c.log.Info("controller starting", "workers", c.cfg.ConcurrentWorkers, "warm", leading != nil)
	r, err := c.open(ctx, leading)
	if err != nil {
		return err
	}
	workers := newGoroutines()
	synced := make(chan struct{})
	workers.Go(func() { c.start(ctx, r, leading, synced, workers) })
	c.serve(ctx, r, synced)
	return c.drain(r, workers)
}

// running is what one Run has open.
type running struct {
	queue   *workQueue
	cache   *openCache
	sources openSources
}

// open (stage 1) creates the queue, then opens the caches of the sources
// (owned.go) and the cache, whose events queue keys from now on (a warm
// standby's from the moment it leads).
func (c *Controller) open(ctx context.Context, leading <-chan struct{}) (*running, error) {
	queue := c.newQueue()
	if leading == nil {
		c.queue.Store(queue)
	}
	sources, err := c.openSources(ctx)
	if err != nil {
		queue.ShutDown()
		return nil, err
	}
	src, err := c.source.open(ctx, c.events(), cache.HandlerOptions{ResyncPeriod: &c.cfg.ResyncInterval})
	if err != nil {
		queue.ShutDown()
		sources.close()
		return nil, err
	}
	sources.route(src) // a source's events queue the keys of src's objects
	return &running{queue: queue, cache: src, sources: sources}, nil
}

// start (stage 2) starts the workers once this replica leads (at once
// outside leader election), once the cache is filled (every listed object
// is then queued: synced is closed) and once the sources' caches are.
func (c *Controller) start(ctx context.Context, r *running, leading, synced <-chan struct{}, workers *goroutines) {
	if !closedBefore(ctx, leading) {
		return
	}
	if leading != nil {
		// Taking over: events queue keys from now on, and every object
		// cached so far is queued once (a key queued twice waits once).
		c.queue.Store(r.queue)
		for _, key := range r.cache.keys() {
			c.add(key, sourceInitial, reasonTakeover)
		}
		c.log.Info("controller handling")
	}
	if !closedBefore(ctx, synced) || !r.sources.waitSynced(ctx) {
		return
	}
	for i := range c.cfg.ConcurrentWorkers {
		workers.Go(func() { c.worker(ctx, i, r.cache, r.queue) })
	}
}

// serve (stage 3) waits for the caches to sync, then serves List, Get and
// HasSynced from them until ctx is done.
func (c *Controller) serve(ctx context.Context, r *running, synced chan<- struct{}) {
	if !r.cache.waitSynced(ctx) || !r.sources.waitSynced(ctx) {
		c.log.Info("controller stopping before its cache synced")
		return
	}
	c.cache.Store(&objectsRef{r.cache})
	c.synced.Store(true)
	close(synced)
	c.log.Info("controller cache synced")
	<-ctx.Done()
	c.cache.Store(nil)
	c.log.Info("controller stopping")
}

// drain (stage 4) shuts the queue down: the workers finish their current
// key, then exit, within ShutdownTimeout; then the caches close.
func (c *Controller) drain(r *running, workers *goroutines) error {
	r.queue.ShutDown()
	defer c.validity.Stop()
	err := workers.wait(c.cfg.clock, c.cfg.ShutdownTimeout)
	c.writes.stop()
	r.cache.close()
	r.sources.close()
	if err != nil {
		c.log.Error("controller stopped with handlers still running", logkey.Err, err)
		return err
	}
	c.log.Info("controller stopped")
	return nil
}

// closedBefore waits until ch is closed (true; a nil ch is closed) or ctx
// is done (false).
func closedBefore(ctx context.Context, ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// workQueue is client-go's rate-limiting workqueue with fresh changes
// first (queue.go): add says which line a key goes in.
type workQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	order *order
}

// add queues key in line p, for reason why.
func (q *workQueue) add(key string, p priority, why handling.Reason) {
	q.order.want(key, p, why)
	q.Add(key)
	q.order.added(key)
}

func (c *Controller) newQueue() *workQueue {
	o := newOrder()
	qcfg := workqueue.TypedQueueConfig[string]{Clock: c.cfg.clock, Queue: o}
	if _, noop := c.cfg.MetricsRecorder.(noopRecorder); !noop {
		// A named queue reports its length and wait times; an unnamed one
		// skips that bookkeeping entirely.
		qcfg.Name = c.cfg.Name
		qcfg.MetricsProvider = queueMetrics{rec: c.cfg.MetricsRecorder}
	}
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
		Name: qcfg.Name, MetricsProvider: qcfg.MetricsProvider, Clock: c.cfg.clock,
		Queue: workqueue.NewTypedWithConfig(qcfg),
	})
	q := workqueue.NewTypedRateLimitingQueueWithConfig(newBackoff(c.cfg.RetryBaseDelay, c.cfg.RetryMaxDelay),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: c.cfg.clock, DelayingQueue: delaying})
	return &workQueue{TypedRateLimitingInterface: q, order: o}
}

// events is what the cache tells the controller: every added or updated
// object's key is queued. There is no delete event: a deleted object has
// no state left to handle; finalizers and owner references do the
// cleaning, and a deleted child queues its owner through a source (see the
// package doc).
func (c *Controller) events() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if isInInitialList {
				c.enqueue(obj, sourceInitial, reasonInitial)
				return
			}
			c.enqueue(obj, sourceChange, reasonCreated)
		},
		UpdateFunc: func(oldObj, obj any) {
			switch {
			case sameVersion(oldObj, obj):
				c.enqueue(obj, sourceResync, reasonResync)
			case newGeneration(oldObj, obj):
				c.enqueue(obj, sourceChange, reasonGeneration)
			default:
				c.enqueue(obj, sourceChange, reasonChanged)
			}
		},
	}
}

// newGeneration reports whether an update changed metadata.generation:
// for most kinds, a change of the spec.
func newGeneration(oldObj, obj any) bool {
	a, okA := oldObj.(metav1.Object)
	b, okB := obj.(metav1.Object)
	return okA && okB && a.GetGeneration() != b.GetGeneration()
}

// sameVersion reports whether an update carries no change: a resync.
func sameVersion(oldObj, obj any) bool {
	a, okA := oldObj.(metav1.Object)
	b, okB := obj.(metav1.Object)
	return okA && okB && a.GetResourceVersion() == b.GetResourceVersion()
}

// enqueue queues an object's key. The queue holds keys, not objects: a key
// added again before a worker takes it is handled once, with the object's
// state at that time.
func (c *Controller) enqueue(obj any, source string, why handling.Reason) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		c.log.Warn("could not compute an object key", logkey.Err, err)
		return
	}
	c.add(key, source, why)
}

// add queues key for reason why, counted under source, while Run's queue
// runs. Keys from the initial list and resyncs wait behind the others
// (queue.go).
func (c *Controller) add(key, source string, why handling.Reason) {
	q := c.queue.Load()
	if q == nil || q.ShuttingDown() {
		return
	}
	c.cfg.MetricsRecorder.IncQueuedEvent(c.cfg.Name, source)
	q.add(key, sourcePriority(source), why)
}

// worker handles keys until the queue shuts down. The workqueue never gives
// a key to a worker while another worker still holds it (between Get and
// Done), so one object is never handled concurrently.
func (c *Controller) worker(ctx context.Context, id int, src objects, queue *workQueue) {
	logger := c.log.With(logkey.Worker, id)
	for {
		key, shutdown := queue.Get()
		if shutdown {
			return
		}
		if ctx.Err() == nil {
			c.process(ctx, logger, key, src, queue)
		}
		queue.Done(key)
	}
}

// goroutines counts the goroutines a Run starts, so that Run can wait for
// them with a timeout without starting one more to wait: after
// ErrShutdownTimeout, the only goroutines left of Run's are the workers
// whose handler ignores its cancelled context, each gone once its handler
// returns (to a shut-down queue, which schedules nothing any more).
type goroutines struct {
	n    atomic.Int64 // running, plus one until wait
	done chan struct{}
}

func newGoroutines() *goroutines {
	g := &goroutines{done: make(chan struct{})}
	g.n.Store(1)
	return g
}

// Go runs f in a goroutine, counted. Only a counted goroutine, or Run
// before wait, may call it.
func (g *goroutines) Go(f func()) {
	g.n.Add(1)
	go func() {
		defer g.exit()
		f()
	}()
}

func (g *goroutines) exit() {
	if g.n.Add(-1) == 0 {
		close(g.done)
	}
}

// wait waits until every goroutine started has returned, at most d on clk.
func (g *goroutines) wait(clk clock.Clock, d time.Duration) error {
	g.exit()
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.done:
		return nil
	case <-t.C():
		return fmt.Errorf("%w (%s)", ErrShutdownTimeout, d)
	}
}
