package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// Shards is the share of a sharded controller's objects that one replica
// handles: the slots of the hash space it has acquired (see SlotOf).
// Package sharding decides which slots a replica should have and calls
// Acquire and Release; Controller.RunSharded handles the objects of the
// acquired slots only.
//
// Two ways of retrieving the share, chosen in NewShards:
//
//   - server-side: each acquired slot has a list and watch of its own, with
//     ListOptions.ShardSelector set to the slot's range, so the API server
//     sends only the share and the cache holds only the share. Needs the
//     API server's ShardedListAndWatch feature gate.
//   - client-side: one list and watch of every object, as without
//     sharding; only the keys of acquired slots are queued and handled.
//
// A key is handled only while its slot is acquired, and Release returns
// only once no handling of the slot's keys runs: between a Release that
// returned and the next Acquire, this replica handles none of the slot's
// objects. Safe for concurrent use.
type Shards struct {
	count  int
	server bool

	mu    sync.Mutex
	slots []slotState
	run   *shardedRun // while RunSharded runs
	// validUntil, if set, is when every slot stops being handled unless
	// pushed back (SetValidUntil), on the running controller's clock.
	validUntil time.Time
}

// slotState is one slot of a Shards.
type slotState struct {
	// acquired: its keys may be handled.
	acquired bool
	// running holds its handlings, whose contexts Suspend cancels; idle is
	// closed once none runs after a release.
	running map[*handlingStop]struct{}
	idle    chan struct{}
	// cache is the slot's own (server-side), while acquired.
	cache *slotCache
}

// slotCache is a server-side slot's informer.
type slotCache struct {
	open *openCache
	stop context.CancelFunc
}

// ErrSlot is wrapped by the errors of Shards' methods given a slot out of
// range.
var ErrSlot = errors.New("no such slot")

// NewShards returns the Shards of a controller whose hash space is cut into
// count slots (ValidSlotCount), none acquired. serverSide asks the API
// server for each slot's objects only (ShardSelector); otherwise every
// object is retrieved and the controller filters.
func NewShards(count int, serverSide bool) (*Shards, error) {
	if !ValidSlotCount(count) {
		return nil, fmt.Errorf("%w: %d slots, want a power of two from 1 to %d", ErrInvalidConfig, count, MaxSlots)
	}
	return &Shards{count: count, server: serverSide, slots: make([]slotState, count)}, nil
}

// Count returns the number of slots.
func (s *Shards) Count() int { return s.count }

// ServerSide reports whether each slot is retrieved with a shard selector.
func (s *Shards) ServerSide() bool { return s.server }

// SetValidUntil sets when this replica's right to its slots ends unless
// renewed: from then on no key is taken for handling, whichever slot it
// is in, until SetValidUntil moves it later. Package sharding sets it to
// the last successful renewal of the replica's Lease plus RenewDeadline, so
// a replica that was paused (SIGSTOP, a long GC) or cut off checks, before
// it takes a key, that it may still hold its slots. The zero time removes
// the limit (the default).
func (s *Shards) SetValidUntil(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.validUntil = t
}

// Acquired returns the acquired slots, in order.
func (s *Shards) Acquired() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i, st := range s.slots {
		if st.acquired {
			out = append(out, i)
		}
	}
	return out
}

// Owns reports whether the object with this UID is in an acquired slot.
// A handler may use it to skip what another replica's share holds.
func (s *Shards) Owns(uid types.UID) bool {
	return s.acquiredSlot(SlotOf(uid, s.count))
}

// Acquire starts handling the objects of slot: server-side, it starts the
// slot's list and watch, whose objects are queued as they arrive;
// client-side, it queues the key of every cached object of the slot.
// Acquiring an acquired slot does nothing.
func (s *Shards) Acquire(slot int) error {
	if slot < 0 || slot >= s.count {
		return fmt.Errorf("%w: %d of %d", ErrSlot, slot, s.count)
	}
	s.mu.Lock()
	st := &s.slots[slot]
	if st.acquired {
		s.mu.Unlock()
		return nil
	}
	st.acquired = true
	run := s.run
	s.mu.Unlock()
	if run != nil {
		run.start(slot)
	}
	return nil
}

// Release stops handling the objects of slot and returns once none of its
// handlings runs any more: keys of the slot still queued are dropped when a
// worker takes them. Server-side, the slot's watch is stopped and its
// cache dropped. If ctx is done first, Release returns ctx's error; the
// slot is released, but a handling may still run. Releasing a slot that is
// not acquired waits for its handlings all the same.
func (s *Shards) Release(ctx context.Context, slot int) error {
	if slot < 0 || slot >= s.count {
		return fmt.Errorf("%w: %d of %d", ErrSlot, slot, s.count)
	}
	idle, c := s.release(slot, false)
	if c != nil {
		c.stop()
		c.open.close()
	}
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("slot %d still has handlings running: %w", slot, ctx.Err())
	}
}

// Suspend releases every slot at once and cancels the contexts of the
// handlings running, for a replica that may no longer own its slots (its
// Lease could not be renewed). It returns once none runs, or with ctx's
// error.
func (s *Shards) Suspend(ctx context.Context) error {
	var idles []chan struct{}
	for slot := range s.count {
		idle, c := s.release(slot, true)
		if c != nil {
			c.stop()
			c.open.close()
		}
		if idle != nil {
			idles = append(idles, idle)
		}
	}
	for _, idle := range idles {
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("handlings still running: %w", ctx.Err())
		}
	}
	return nil
}

// release marks slot released (cancelling its handlings if cancel) and
// returns the channel closed when its handlings are done (nil if none
// runs) and its cache to stop.
func (s *Shards) release(slot int, cancel bool) (chan struct{}, *slotCache) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.slots[slot]
	c := st.cache
	st.cache = nil
	st.acquired = false
	if cancel {
		for h := range st.running {
			h.cancel()
		}
	}
	if len(st.running) == 0 {
		return nil, c
	}
	if st.idle == nil {
		st.idle = make(chan struct{})
	}
	return st.idle, c
}

// begin is called by a worker before handling a key of slot: ok is false
// if the slot is not acquired by a running controller (drop the key);
// otherwise cancel is called if Suspend stops the slot, and end must
// follow.
func (s *Shards) begin(slot int, cancel context.CancelFunc) (h *handlingStop, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.slots[slot]
	if !st.acquired || s.run == nil {
		return nil, false
	}
	if !s.validUntil.IsZero() && !s.run.c.cfg.clock.Now().Before(s.validUntil) {
		return nil, false
	}
	h = &handlingStop{cancel: cancel}
	if st.running == nil {
		st.running = map[*handlingStop]struct{}{}
	}
	st.running[h] = struct{}{}
	return h, true
}

// end is called once a handling that began returns.
func (s *Shards) end(slot int, h *handlingStop) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.slots[slot]
	delete(st.running, h)
	if len(st.running) > 0 {
		return
	}
	if st.idle != nil {
		close(st.idle)
		st.idle = nil
	}
}

// acquiredSlot reports whether slot is acquired.
func (s *Shards) acquiredSlot(slot int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots[slot].acquired
}

// bind attaches a run: slots acquired before are started.
func (s *Shards) bind(run *shardedRun) error {
	s.mu.Lock()
	if s.run != nil {
		s.mu.Unlock()
		return errors.New("these Shards are already used by a running controller")
	}
	s.run = run
	var started []int
	for i := range s.slots {
		if s.slots[i].acquired {
			started = append(started, i)
		}
	}
	s.mu.Unlock()
	for _, slot := range started {
		run.start(slot)
	}
	return nil
}

// unbind detaches the run once it is over; the caches were stopped with
// its context.
func (s *Shards) unbind() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = nil
	for i := range s.slots {
		s.slots[i].cache = nil
	}
}

// caches returns the open caches of the acquired server-side slots.
func (s *Shards) caches() []*openCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*openCache
	for _, st := range s.slots {
		if st.cache != nil {
			out = append(out, st.cache.open)
		}
	}
	return out
}

// setCache records the cache of a server-side slot just started, unless
// the slot was released meanwhile (false: stop it).
func (s *Shards) setCache(slot int, c *slotCache) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.slots[slot]
	if !st.acquired || st.cache != nil {
		return false
	}
	st.cache = c
	return true
}

// slotOf returns the slot of a cached object, or false if it has no UID.
func (s *Shards) slotOf(obj any) (int, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetUID() == "" {
		return 0, false
	}
	return SlotOf(m.GetUID(), s.count), true
}

// shardedRun is what a running sharded controller gives its Shards: how to
// start a slot.
type shardedRun struct {
	// ctx is RunSharded's, kept because Acquire, which starts a slot's
	// goroutines and informer, is called from outside with none.
	ctx context.Context
	c   *Controller
	s   *Shards
	// all is the cache of every object (client-side); nil server-side.
	all *openCache
	// synced is closed once all has synced (client-side).
	synced <-chan struct{}
	// slotsWG counts the goroutines started for slots.
	slotsWG *sync.WaitGroup
}

// start begins handling slot: client-side, its cached keys are queued
// (once the cache has synced); server-side, its informer is started.
func (r *shardedRun) start(slot int) {
	if !r.s.server {
		r.slotsWG.Go(func() {
			select {
			case <-r.synced:
			case <-r.ctx.Done():
				return
			}
			for _, key := range r.all.keys() {
				item, exists, err := r.all.get(key)
				if err != nil || !exists {
					continue
				}
				if got, ok := r.s.slotOf(item); ok && got == slot && r.s.acquiredSlot(slot) {
					r.c.add(key, sourceInitial)
				}
			}
		})
		return
	}
	ctx, stop := context.WithCancel(r.ctx)
	src := ownInformer{
		retriever: slotRetriever{Retriever: r.c.cfg.Retriever, selector: SlotSelector([]int{slot}, r.s.count)},
		resync:    r.c.cfg.ResyncInterval,
		onError:   r.c.retrieve.handler(),
		idle:      r.c.source.idle,
		onIdle:    r.c.source.onIdle,
		clock:     r.c.cfg.clock,
	}
	open, err := src.open(ctx, r.c.shardedEvents(r.s), cache.HandlerOptions{ResyncPeriod: &r.c.cfg.ResyncInterval})
	if err != nil {
		stop()
		r.c.log.Error("could not start a slot's watch", "slot", slot, "err", err)
		return
	}
	if !r.s.setCache(slot, &slotCache{open: open, stop: stop}) {
		stop()
		open.close()
	}
}

// slotRetriever is a Retriever whose lists and watches carry a shard
// selector.
type slotRetriever struct {
	Retriever
	selector string
}

func (r slotRetriever) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.ShardSelector = r.selector
	return r.Retriever.List(ctx, opts)
}

func (r slotRetriever) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.ShardSelector = r.selector
	return r.Retriever.Watch(ctx, opts)
}

func (r slotRetriever) describe() string { return describe(r.Retriever) }

// IsWatchListSemanticsUnSupported forwards the wrapped Retriever's answer
// (see Retriever).
func (r slotRetriever) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(r.Retriever)
}
