package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kooperkit/kooper/kooper/log"
)

// RunSharded is Run for one replica of a sharded controller: it handles
// only the objects whose UID hashes into a slot of shards that is acquired
// (Shards.Acquire), while shards decide; package sharding acquires and
// releases the slots as replicas come and go. A key is never handled while
// its slot is released, so two replicas whose acquired slots are disjoint
// never handle one object at once.
//
// Server-side shards retrieve each acquired slot on its own watch
// (ShardSelector) and cannot use a Shared retriever; client-side shards
// retrieve every object, as Run does. Config.HandleDuringSync is ignored
// server-side: a slot's keys are queued as its objects arrive anyway.
// RunSharded returns as Run does, with every slot's watch stopped; shards
// may then be used by another RunSharded.
func (c *Controller) RunSharded(ctx context.Context, shards *Shards) error {
	if shards == nil {
		return fmt.Errorf("%w: RunSharded needs Shards", ErrInvalidConfig)
	}
	if !c.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	c.shards.Store(shards)
	mode := "client-side"
	if shards.server {
		mode = "server-side"
	}
	c.log.Info("controller starting", "workers", c.cfg.ConcurrentWorkers, "sharded", mode, "slots", shards.count)

	queue := c.newQueue()
	c.queue.Store(queue)
	// The caches of the sources (owned.go), whose keys go through
	// Enqueue, so admits drops those of slots not acquired.
	sources, err := c.openSources(ctx)
	if err != nil {
		queue.ShutDown()
		return err
	}
	var slotsWG sync.WaitGroup
	run := &shardedRun{ctx: ctx, c: c, s: shards, slotsWG: &slotsWG}
	var src objects
	synced := make(chan struct{})
	if shards.server {
		src = slotsView{shards}
		close(synced)
	} else {
		all, err := c.source.open(ctx, c.shardedEvents(shards), cache.HandlerOptions{ResyncPeriod: &c.cfg.ResyncInterval})
		if err != nil {
			queue.ShutDown()
			sources.close()
			return err
		}
		run.all, run.synced, src = all, synced, all
	}
	sources.route(src)
	if err := shards.bind(run); err != nil {
		queue.ShutDown()
		sources.close()
		if run.all != nil {
			run.all.close()
		}
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}

	workers := newGoroutines()
	for i := range c.cfg.ConcurrentWorkers {
		workers.Go(func() {
			if !closedBefore(ctx, synced) || !sources.waitSynced(ctx) {
				return
			}
			c.worker(ctx, i, src, queue)
		})
	}
	if (run.all == nil || run.all.waitSynced(ctx)) && sources.waitSynced(ctx) {
		if run.all != nil {
			close(synced)
		}
		c.cache.Store(&objectsRef{src})
		c.synced.Store(true)
		c.log.Info("controller cache synced")
		<-ctx.Done()
		c.cache.Store(nil)
		c.log.Info("controller stopping")
	} else {
		c.log.Info("controller stopping before its cache synced")
	}

	queue.ShutDown()
	err = workers.wait(c.cfg.clock, c.cfg.ShutdownTimeout)
	slotsWG.Wait()
	for _, open := range shards.caches() {
		open.close() // stopped with ctx
	}
	if run.all != nil {
		run.all.close()
	}
	sources.close()
	shards.unbind()
	if err != nil {
		c.log.Error("controller stopped with handlers still running", log.KeyErr, err)
		return err
	}
	c.log.Info("controller stopped")
	return nil
}

// shardedEvents is events, queueing only the keys of acquired slots.
func (c *Controller) shardedEvents(s *Shards) cache.ResourceEventHandler {
	all := c.events()
	owned := func(obj any) bool {
		slot, ok := s.slotOf(obj)
		return ok && s.acquiredSlot(slot)
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if owned(obj) {
				all.OnAdd(obj, isInInitialList)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			if owned(obj) {
				all.OnUpdate(oldObj, obj)
			}
		},
		DeleteFunc: func(obj any) {
			if owned(obj) {
				all.OnDelete(obj)
			}
		},
	}
}

// admits reports whether an Enqueue of key may go into a sharded
// controller's queue: its object is cached and in an acquired slot.
func (c *Controller) admits(shards *Shards, key string) bool {
	ref := c.cache.Load()
	if ref == nil {
		return false
	}
	item, exists, err := ref.src.get(key)
	if err != nil || !exists {
		return false
	}
	slot, ok := shards.slotOf(item)
	return ok && shards.acquiredSlot(slot)
}

// slotsView reads the caches of the acquired server-side slots as one.
type slotsView struct{ s *Shards }

func (v slotsView) get(key string) (any, bool, error) {
	var errs []error
	for _, open := range v.s.caches() {
		item, exists, err := open.get(key)
		if exists {
			return item, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, errors.Join(errs...)
}

func (v slotsView) keys() []string {
	var keys []string
	for _, open := range v.s.caches() {
		keys = append(keys, open.keys()...)
	}
	return keys
}

func (v slotsView) list() []any {
	var items []any
	for _, open := range v.s.caches() {
		items = append(items, open.list()...)
	}
	return items
}

// DetectServerSharding reports whether the API server filters this
// controller's lists by ListOptions.ShardSelector (its ShardedListAndWatch
// feature gate is on): it lists one object with a selector of the whole
// hash space, and the server echoes the selector in the list's
// metadata.shardInfo only when it applied it. A server without the gate
// ignores the field. The answer decides NewShards' serverSide.
func (c *Controller) DetectServerSharding(ctx context.Context) (bool, error) {
	list, err := c.cfg.Retriever.List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: SlotSelector([]int{0}, 1)})
	if err != nil {
		return false, fmt.Errorf("could not list %s to detect server-side sharding: %w", describeOr(c.cfg.Retriever), err)
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

// describeOr names what r retrieves, or "the objects".
func describeOr(r Retriever) string {
	if d := describe(r); d != "" {
		return d
	}
	return "the objects"
}
